"""The parts of the checks' reports: where they go, the machine's paths kept out, two end states' differences."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import kopf
from pytest_kopf._report.location import PathScrubber, ReportTarget
from pytest_kopf._report.states import state_differences
from pytest_kopf.driving import mask_object


def test_reports_are_named_after_the_test_and_the_check(tmp_path: Path) -> None:
    target = ReportTarget(lambda: tmp_path / "reports")
    target.test = "tests/test_x.py::test_robust[sync]"
    first = target.path_for("crash-restart")
    assert first == tmp_path / "reports" / "tests_test_x.py_test_robust_sync-crash-restart.html"
    assert first.parent.is_dir()
    assert target.path_for("crash-restart").name == "tests_test_x.py_test_robust_sync-crash-restart-2.html"
    target.test = None
    assert target.path_for("retries").name == "check_operator-retries.html"


def test_the_machines_paths_are_rewritten_but_the_users_files_are_kept() -> None:
    operator = os.path.join(os.getcwd(), "tests", "checks", "gallery", "crash_child_bug.py")
    scrub = PathScrubber(named=[operator])
    framework = os.path.dirname(kopf.__file__)
    text = (
        f'File "{framework}/_core/actions/execution.py", line 3, in run\n'
        f'File "{operator}", line 12, in create_fn\n'
        f"kubeconfig at {tempfile.gettempdir()}/kopf-world-abc/config; home {os.path.expanduser('~')}/.kube/x\n"
        f"interpreter {sys.prefix}/bin/python; GET /apis/checks.example/v1/namespaces/default/gadgets/obj-0\n"
    )
    scrubbed = scrub(text)
    assert 'File "kopf/_core/actions/execution.py", line 3' in scrubbed
    assert f'File "{operator}", line 12' in scrubbed  # named by the user: kept as it is
    assert "kubeconfig at $TMPDIR/kopf-world-abc/config; home ~/.kube/x" in scrubbed
    assert "GET /apis/checks.example/v1/namespaces/default/gadgets/obj-0" in scrubbed  # an API path, not a file
    leftover = scrubbed.replace(operator, "")
    for root in (os.getcwd(), tempfile.gettempdir(), os.path.expanduser("~"), sys.prefix, framework):
        assert root not in leftover, (root, scrubbed)


def gadget(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "checks.example/v1",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"},
        **fields,
    }


def test_two_end_states_differ_in_the_fields_that_count_and_in_the_noise() -> None:
    expected = [gadget("obj-0", spec={"a": 1}, status={"seen": "x", "at": "10:00"})]
    actual = [
        gadget("obj-0", spec={"a": 1}, status={"seen": "y", "at": "10:05"}),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "obj-0-*", "namespace": "default"}},
    ]
    rows = state_differences(expected, actual, lambda obj: mask_object(obj, ["status.at"]))
    assert [(row.where, row.path, row.left, row.right, row.noise) for row in rows] == [
        ("Gadget default/obj-0", "status.at", '"10:00"', '"10:05"', True),
        ("Gadget default/obj-0", "status.seen", '"x"', '"y"', False),
        ("ConfigMap default/obj-0-*", "(the object)", "(absent)", "present", False),
    ]


def test_objects_alike_after_masking_are_paired_in_their_order() -> None:
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "obj-0-*", "namespace": "default"}}
    rows = state_differences([child], [child, dict(child, data={"x": "1"})], lambda obj: obj)
    assert [(row.where, row.path, row.left, row.right) for row in rows] == [
        ("ConfigMap default/obj-0-* (#2)", "(the object)", "(absent)", "present"),
    ]
