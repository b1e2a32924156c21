"""The HTML report of a failed check: the two worlds side by side, where they part, the details of every item,
the end states' difference, the reproduction; where the file goes; a 20-step failure's size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kopf._report.failures import reported
from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.stateful import OperatorMachine
from pytest_kopf.strategies.steps import Action, Advance, CrashAfterWrites, Create, PatchSpec
from tests.pages import Element, details, external_references, items, label, parse_page

from ..plugin.conftest import BASE, NO_ASYNCIO
from .reports import checked_report

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"


def gadget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "checks.example/v1",
        "kind": "Gadget",
        "metadata": {"name": "obj-0", "namespace": "default"},
        "spec": spec,
    }


def failed(bug: str, check: str, steps: list[Action], **options: Any) -> OperatorCheckFailed:
    """The failure of these steps for a gallery operator, reported (as check_operator reports its last one)."""
    machine = OperatorMachine.configured(
        f"Report_{bug}",
        paths=[GALLERY / f"{bug}.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=[check],
        names=["obj-0"],
        settle_timeout=300,
        **options,
    )
    with pytest.raises(OperatorCheckFailed) as info:
        machine.replay(steps)
    return reported(info.value)


def in_run(row: Element, run: int) -> list[Element]:
    """The items of a row in one run's columns (0: the checked world, 1: the fault-free world)."""
    cells = row.find_all("td")
    between = next(index for index, cell in enumerate(cells) if "between" in cell.classes)
    chosen = cells[:between] if run == 0 else cells[between + 1 :]
    return [item for cell in chosen for item in cell.find_all("div", cls="item")]


def test_the_worlds_side_by_side_part_where_the_crash_cut_a_write_off(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    failure = failed("crash_child_bug", "crash-restart", [CrashAfterWrites(1), Create(gadget(size=1))])
    assert Path(failure.report or "").parent == tmp_path_factory.getbasetemp() / "kopf-reports"  # the default
    root = checked_report(failure, named=[GALLERY / "crash_child_bug.py", CRD])
    table = root.find("table", cls="timeline")
    assert [head.text() for head in table.find_all("th", cls="run")] == ["the checked world", "the fault-free world"]
    lanes = [head.attrs["data-lane"] for head in table.find_all("th", cls="lane")]
    checked, baseline = lanes[: lanes.index("user", 1)], lanes[lanes.index("user", 1) :]
    assert checked[:4] == ["user", "simulator", "operator #1", "operator #2"]  # the crash made a second one
    assert "gadgets default/obj-0" in checked and "gadgets default/obj-0" in baseline
    assert sum(lane.startswith("configmaps default/obj-0-") for lane in checked) == 2  # the bug: a second child
    assert sum(lane.startswith("configmaps default/obj-0-") for lane in baseline) == 1
    assert "simulator" not in baseline and "operator #2" not in baseline

    # Aligned at the user's action: the create is on one row in both worlds.
    anchors = [row for row in table.find("tbody").find_all("tr") if "anchor" in row.classes]
    assert [[label(item) for item in in_run(row, 0) + in_run(row, 1)] for row in anchors] == [
        [Create(gadget(size=1)).code()] * 2
    ]
    # Where the worlds part: the operator's POST of the child, cut off by the crash (the crash itself is the
    # simulator's doing, set aside), while the fault-free world's operator went on.
    parted = root.by_id("first-divergence")
    [cut] = in_run(parted, 0)
    assert cut.attrs["data-lane"] == "operator #1" and "o-failed" in cut.classes
    assert label(cut).startswith("POST configmaps default/ → CancelledError (cut off)")
    assert '"generateName": "obj-0-"' in details(cut)  # hovering shows the request's body
    assert "by the handler 'create_fn'" in details(cut)
    assert in_run(parted, 1) == []
    crash = items(root, lambda item: "k-crash" in item.classes)
    assert [label(item) for item in crash] == ["crash after write #1: POST /api/v1/namespaces/default/configmaps"]
    changes = items(root, lambda item: item.attrs["data-lane"] == "gadgets default/obj-0")
    assert label(changes[0]).startswith("ADDED rv=")  # each object's changes, with their resource versions
    assert any("status.create_fn" in label(item) for item in changes)

    rows = root.by_id("end-states").find("tbody").find_all("tr")
    assert [[cell.text() for cell in row.find_all("td")] for row in rows] == [
        ["ConfigMap default/obj-0-* (#2)", "(the object)", "(absent)", "present"]
    ]


def test_a_handlers_exception_is_in_its_items_details() -> None:
    steps: list[Action] = [Create(gadget(size=1)), PatchSpec(RESOURCE, "obj-0", {"size": None})]
    failure = failed("optional_field_bug", "convergence", steps)
    root = checked_report(failure, named=[GALLERY / "optional_field_bug.py", CRD])
    assert [head.text() for head in root.find_all("th", cls="run")] == ["the checked world"]  # no comparison: one
    assert not root.find_all(id="first-divergence")
    failures = items(root, lambda item: "k-handler" in item.classes and "o-failed" in item.classes)
    assert failures, "no failed handler on the timeline"
    text = details(failures[0])
    assert label(failures[0]).startswith("update_fn failed with an exception")
    assert "KeyError: 'size'" in text
    assert f'File "{GALLERY / "optional_field_bug.py"}", line 13, in update_fn' in text  # the user's file: kept
    assert 'File "kopf/_core/actions/' in text  # the framework's frames: relative to the import path


def test_a_twenty_step_failure_makes_a_report_of_under_two_megabytes() -> None:
    steps: list[Action] = [CrashAfterWrites(1), Create(gadget(size=0))]
    for size in range(1, 10):
        steps.extend([PatchSpec(RESOURCE, "obj-0", {"size": size}), Advance(17.0)])
    assert len(steps) == 20
    failure = failed("crash_child_bug", "crash-restart", steps)
    root = checked_report(failure, named=[GALLERY / "crash_child_bug.py", CRD])  # under 2 MB, among the rest
    anchors = [row for row in root.find("tbody").find_all("tr") if "anchor" in row.classes]
    assert len(anchors) == 19  # the user's actions, each on one row in both worlds
    assert all(len(in_run(row, 0)) == len(in_run(row, 1)) == 1 for row in anchors)


def test_the_noise_masked_by_the_user_is_what_the_comparison_leaves_out() -> None:
    failure = failed(
        "crash_child_bug", "crash-restart", [CrashAfterWrites(1), Create(gadget(size=1))], mask=["status.create_fn"]
    )
    evidence = failure.evidence
    masked = evidence.masking({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, "status": {"create_fn": 1}})
    assert masked["status"] == {"create_fn": "<masked>"}


REPORTED = f"""
from pathlib import Path

from hypothesis import Phase, settings

from pytest_kopf.checks import check_operator
from pytest_kopf.stateful import OperatorMachine
from pytest_kopf.strategies.steps import Create, CrashAfterWrites

GALLERY = Path({str(GALLERY)!r})
# The bug's scenario from the start of every example: the operator crashes after its first write (the child).
STEPS = [
    CrashAfterWrites(1),
    Create({{"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {{"name": "obj-0"}}, "spec": {{}}}}),
]


def test_checked():
    check_operator(
        paths=[GALLERY / "crash_child_bug.py"],
        manifests=[GALLERY / "crd.yaml"],
        resources=["gadgets.checks.example"],
        checks=["crash-restart"],
        max_examples=5,
        max_steps=2,
        names=["obj-0"],
        settle_timeout=300,
        initial_steps=STEPS,
    )


class CrashChild(OperatorMachine):
    paths = [GALLERY / "crash_child_bug.py"]
    manifests = [GALLERY / "crd.yaml"]
    resources = ["gadgets.checks.example"]
    checks = ["crash-restart"]
    names = ["obj-0"]
    settle_timeout = 300
    initial_steps = STEPS


TestCrashChild = CrashChild.TestCase
TestCrashChild.settings = settings(
    max_examples=5, stateful_step_count=2, deadline=None, database=None, phases=[Phase.generate]
)
"""


def test_the_reports_go_where_the_user_says_and_the_failures_name_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_robustness=REPORTED)
    reports = pytester.path / "reports"
    result = pytester.runpytest_inprocess("--kopf-report", str(reports), *NO_ASYNCIO, *BASE, "-p", "no:randomly")
    result.assert_outcomes(failed=2)
    checked = reports / "test_robustness.py_test_checked-crash-restart.html"
    machine = reports / "test_robustness.py_TestCrashChild_runTest-crash-restart.html"
    assert sorted(reports.iterdir()) == sorted([checked, machine])
    result.stdout.fnmatch_lines(
        [
            f"*The report (a timeline of the run, open it in a browser): {checked}",
            "*- kopf report -*",
            f"The report of the failed check (open it in a browser): {machine}",
        ]
    )


def test_a_passing_run_writes_what_it_explored_on_demand(tmp_path: Path) -> None:
    report = check_operator(
        paths=[GALLERY / "crash_child_ok.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["convergence", "crash-restart"],
        max_examples=4,
        max_steps=6,
        names=["obj-0"],
        settle_timeout=300,
    )
    path = tmp_path / "explored.html"
    report.write_html(path)
    root = parse_page(path.read_text(encoding="utf-8"))
    assert external_references(root) == []
    assert root.find("title").text() == "What check_operator explored: convergence, crash-restart"
    figures = [[cell.text() for cell in row.find_all("td")] for row in root.by_id("per-check").find_all("tr")[1:]]
    assert [row[:2] for row in figures] == [
        ["convergence", str(report.per_check["convergence"]["examples"])],
        ["crash-restart", str(report.per_check["crash-restart"]["examples"])],
    ]
    covered = report.coverage["crash-restart"]
    assert (
        sum(covered.actions.values()) + sum(covered.perturbations.values())
        == report.per_check["crash-restart"]["steps"]
    )
    assert covered.handlers["Handler 'create_fn'"]["succeeded"] >= 1
    handlers = root.find("section", id="crash-restart-the-handlers-reached")
    assert "Handler 'create_fn'" in handlers.text()
    actions = root.find("section", id="convergence-the-users-actions").text()
    assert all(kind in actions for kind in report.coverage["convergence"].actions)


NOISY_AND_BUGGY = '''
"""The time of its handling in the status (noise: two correct runs differ), a child with a generated name (the bug)."""

import datetime

import kopf
from kopf._cogs.clients import api

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
async def create_fn(name, namespace, body, patch, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": f"{name}-"}, "data": {}}
    kopf.append_owner_reference(child, owner=body)
    await api.post(f"/api/v1/namespaces/{namespace}/configmaps", payload=child, settings=SETTINGS)
    patch.status["handledAt"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
'''


def test_the_learned_noise_is_greyed_and_the_bug_is_not(tmp_path: Path) -> None:
    operator = tmp_path / "noisy_and_buggy.py"
    operator.write_text(NOISY_AND_BUGGY, encoding="utf-8")
    machine = OperatorMachine.configured(
        "NoisyAndBuggy",
        paths=[operator],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["crash-restart"],
        names=["obj-0"],
        settle_timeout=300,
    )
    with pytest.raises(OperatorCheckFailed) as info:
        machine.replay([CrashAfterWrites(1), Create(gadget(size=1))])  # after the child: handled again 1 s later
    failure = reported(info.value)
    root = checked_report(failure, named=[operator, CRD])
    rows = root.by_id("end-states").find("tbody").find_all("tr")
    shown = {(row.find_all("td")[0].text(), row.find("td", cls="path").text()): row.attrs["class"] for row in rows}
    assert shown[("Gadget default/obj-0", "status.handledAt")] == "noise"  # a later time, after the crash
    assert shown[("ConfigMap default/obj-0-* (#2)", "(the object)")] == "differs"
    assert "Learned as nondeterministic: Gadget obj-0 status.handledAt" in root.by_id("end-states").text()
