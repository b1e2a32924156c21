"""``kopf-sim show``: a watch-event log as a timeline page (a lane per object, an item per event, who wrote what)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kopf_sim.cli import main
from kopf_sim.recording.eventlog import ChangeRecorder
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from tests.helpers import widget
from tests.pages import details, external_references, items, label, parse_page

from .conftest import CRD

MERGE = "application/merge-patch+json"
EXAMPLE_LOG = Path(__file__).parents[2] / "examples" / "06-replay" / "incident.jsonl"


def incident() -> str:
    """Two widgets: w1 created by kubectl, given a status by an operator, patched, deleted; w2 only created."""
    clock = ManualClock()
    cluster = Cluster(clock=clock, uids=SeededUids(7))
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    stream = io.StringIO()
    cluster.observers.append(ChangeRecorder(stream, clock=clock, source={"recorder": "test"}))
    widgets = cluster.resource("acme.example", "v1", "widgets")
    clock.advance(1)
    cluster.create(widgets, "default", widget("w1", size=1), manager="kubectl-create")
    clock.advance(2)
    cluster.patch(widgets, "default", "w1", {"status": {"phase": "Ready"}}, MERGE, subresource="status", manager="op")
    clock.advance(3)
    cluster.patch(widgets, "default", "w1", {"spec": {"size": 2}}, MERGE, manager="kubectl-patch")
    cluster.create(widgets, "default", widget("w2", size=5), manager="kubectl-create")
    clock.advance(4)
    cluster.delete(widgets, "default", "w1")
    return stream.getvalue()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "incident.jsonl"
    path.write_text(incident(), encoding="utf-8")
    return path


def test_a_log_is_drawn_with_a_lane_per_object_and_an_item_per_event(log: Path, tmp_path: Path) -> None:
    output = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["show", str(log), "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert result.output == f"Wrote 5 events on 2 lanes into {output}.\n"
    root = parse_page(output.read_text(encoding="utf-8"))
    assert external_references(root) == []
    lanes = [head.attrs["data-lane"] for head in root.find_all("th", cls="lane")]
    assert lanes == ["Widget default/w1", "Widget default/w2"]
    shown = [(item.attrs["data-lane"], item.attrs["data-t"], label(item)) for item in items(root)]
    assert shown == [
        ("Widget default/w1", "1.000000", "ADDED rv=6 by kubectl-create"),
        ("Widget default/w1", "3.000000", "MODIFIED rv=7 by op: status.phase"),
        ("Widget default/w1", "6.000000", "MODIFIED rv=8 by kubectl-patch: metadata.generation, spec.size"),
        ("Widget default/w2", "6.000000", "ADDED rv=9 by kubectl-create"),
        ("Widget default/w1", "10.000000", "DELETED rv=10"),
    ]
    patched = details(items(root)[2])
    assert f"line 4 of {log}" in patched
    assert "spec.size: 1 → 2" in patched
    assert "written by: kubectl-patch" in patched
    assert "size: 2" in patched  # the whole object, as delivered
    assert {"k-modified"} <= items(root)[2].classes and {"k-deleted"} <= items(root)[4].classes
    summary = root.by_id("summary").text()
    assert "Segment 1: started 2026-01-01T00:00:00.000000Z; secrets redacted; recorder: test" in summary
    assert "5 events shown (2 ADDED, 1 DELETED, 2 MODIFIED) about 2 objects, over 1 to 10 s." in summary
    objects = [
        [cell.text() for cell in row.find_all("td")] for row in root.by_id("objects").find("tbody").find_all("tr")
    ]
    assert objects == [
        ["Widget default/w1", "4", "1 s", "10 s", "10", "deleted"],
        ["Widget default/w2", "1", "6 s", "6 s", "9", "present"],
    ]


def test_the_page_goes_next_to_the_log_by_default_and_names_no_other_path(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(log.parent)
    result = CliRunner().invoke(main, ["show", "incident.jsonl"])
    assert result.exit_code == 0, result.output
    assert result.output.endswith("into incident.html.\n")
    text = (log.parent / "incident.html").read_text(encoding="utf-8")
    assert os.getcwd() not in text and str(log.parent) not in text
    assert "line 2 of incident.jsonl" in text


def test_only_some_resources_or_the_start_of_a_log(log: Path, tmp_path: Path) -> None:
    output = tmp_path / "part.html"
    result = CliRunner().invoke(main, ["show", str(log), "-o", str(output), "--until", "5"])
    assert result.exit_code == 0, result.output
    assert [label(item) for item in items(parse_page(output.read_text()))] == [
        "ADDED rv=6 by kubectl-create",
        "MODIFIED rv=7 by op: status.phase",
    ]
    result = CliRunner().invoke(main, ["show", str(log), "-o", str(output), "-r", "configmaps"])
    assert result.exit_code == 1
    assert "no events of 'configmaps' in the log (its resources: widgets.acme.example)" in result.output


def test_the_recorded_example_incident(tmp_path: Path) -> None:
    output = tmp_path / "incident.html"
    result = CliRunner().invoke(main, ["show", str(EXAMPLE_LOG), "-o", str(output)])
    assert result.exit_code == 0, result.output
    root = parse_page(output.read_text(encoding="utf-8"))
    labels = [label(item) for item in items(root)]
    assert len(labels) == 11 and labels[0] == "ADDED rv=6 by kubectl-create" and labels[-1] == "DELETED rv=20"
    assert sum("by kopf" in text for text in labels) >= 3


def test_a_bad_log_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "kopf-sim-watch-log", "version": 1}\nnot json\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["show", str(bad)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: Cannot show {bad}:\n  {bad}:2: not JSON")
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["show", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 1 and "cannot read the log" in result.output
    result = CliRunner().invoke(main, ["show", str(EXAMPLE_LOG), "-o", str(tmp_path / "no" / "such" / "dir.html")])
    assert result.exit_code == 1 and "cannot write" in result.output and "No such file or directory" in result.output
