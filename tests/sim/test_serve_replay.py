"""``kopf-sim serve --replay LOG [--speed X]``: a recorded log replayed into a served cluster (and recorded again)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from kopf_sim.cli import SpeedType
from kopf_sim.http.app import build_app
from kopf_sim.recording.apiclient import app_api
from kopf_sim.recording.replaying import prepare, read_log
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing import virtualtime

ROOT = Path(__file__).resolve().parents[2]
KOPF_SIM = Path(sys.executable).parent / "kopf-sim"
INCIDENT = ROOT / "examples" / "06-replay" / "incident.jsonl"
CRD = ROOT / "examples" / "crd.yaml"


def test_a_served_replay_is_recorded_as_the_same_changes(tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    process = subprocess.Popen(
        [
            str(KOPF_SIM),
            "serve",
            "--kubeconfig",
            str(tmp_path / "kubeconfig"),
            "--load",
            str(CRD),
            "--replay",
            str(INCIDENT),
            "--speed",
            "20",
            "--record",
            str(again),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line.rstrip())
            if line.startswith("Replayed"):
                break
    finally:
        process.terminate()
        process.wait(30)
    assert (
        lines[-2] == f"Replaying {INCIDENT}: 6 changes of 1 object over 5.3 s of the log "
        f"(5 events with nothing to replay)."
    )
    assert lines[-1] == "Replayed 6 changes; still serving."

    log = read_log(again)  # the format of --record: the same as kopf-sim record's
    assert log.headers[0]["source"] == {"recorder": "kopf-sim serve --record"}
    changes = [e for e in log.changes() if e.resource.plural == "kopfexamples"]  # not the controllers' objects
    assert [(e.type, e.object["spec"]["field"]) for e in changes] == [
        ("ADDED", "blue"),
        ("MODIFIED", "blue"),
        ("MODIFIED", "green"),
        ("MODIFIED", "blue"),
        ("MODIFIED", "green"),
        ("DELETED", "green"),
    ]  # no operator here: nothing held the object at its deletion
    assert changes[1].object["status"] == {"paint": {"colour": "blue"}}  # the recorded operator's result, replayed
    span = changes[-1].t - changes[0].t
    # At 20 times the recorded pace: the summary's "5.3 s" is rounded (the log's span is 5.25 s or more), and the
    # first change may land a moment after the replay's clock has started; plus some slack for a busy machine.
    assert 0.9 * 5.25 / 20 <= span < 5.3 / 20 + 2.0


def test_a_recording_of_a_loaded_cluster_starts_with_what_was_loaded_and_replays_alone(tmp_path: Path) -> None:
    """Without the loaded CRD in it, the log replayed alone failed with "unknown resource kopfexamples.kopf.dev"."""
    manifest = tmp_path / "flappy.yaml"
    manifest.write_text("apiVersion: kopf.dev/v1\nkind: KopfExample\nmetadata: {name: flappy}\nspec: {field: blue}\n")
    log_path = tmp_path / "loaded.jsonl"
    command = [str(KOPF_SIM), "serve", "--port", "0", "--kubeconfig", str(tmp_path / "kubeconfig")]
    command += ["--controllers", "none", "--load", str(CRD), "--load", str(manifest), "--record", str(log_path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("Press Ctrl+C"):
                break
    finally:
        process.terminate()
        process.wait(30)

    log = read_log(log_path)
    # What every fresh cluster has (its namespaces) is not recorded; the CRD comes before its object.
    assert [(e.t, e.type, e.resource.plural, e.object["metadata"]["name"]) for e in log.events] == [
        (0.0, "ADDED", "customresourcedefinitions", "kopfexamples.kopf.dev"),
        (0.0, "ADDED", "kopfexamples", "flappy"),
    ]

    async def replay_into_a_fresh_cluster() -> Any:
        cluster = Cluster(clock=virtualtime.loop_clock(None))
        replay = await prepare(log, app_api(build_app(cluster)))  # no LogError: the log defines its resource
        await replay.run(speed=None)
        return cluster.get(cluster.resource("kopf.dev", "v1", "kopfexamples"), "default", "flappy")

    assert virtualtime.run(replay_into_a_fresh_cluster())["spec"] == {"field": "blue"}


def test_a_bad_log_is_refused_before_serving(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "kopf-sim-watch-log", "version": 1}\nnot json\n')
    result = subprocess.run([str(KOPF_SIM), "serve", "--replay", str(bad)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "Error: The log cannot be replayed (1 problem; nothing was written):",
        f"  {bad}:2: not JSON (Expecting value: line 1 column 1 (char 0))",
    ]
    assert result.stdout == ""
    result = subprocess.run(
        [str(KOPF_SIM), "serve", "--replay", str(INCIDENT)], capture_output=True, text=True, timeout=30
    )  # without the CRD
    assert result.returncode == 1 and f"{INCIDENT}:2: unknown resource kopfexamples.kopf.dev" in result.stderr


def test_a_log_with_a_time_not_a_number_is_refused_before_serving(tmp_path: Path) -> None:
    """With 't': NaN, a replay at the recorded pace took no time at all; now it is the line's error, no traceback."""
    bad = tmp_path / "nan.jsonl"
    bad.write_text(
        '{"format": "kopf-sim-watch-log", "version": 1}\n'
        '{"t": NaN, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "ADDED", '
        '"object": {"metadata": {"name": "x"}}}\n'
    )
    result = subprocess.run([str(KOPF_SIM), "serve", "--replay", str(bad)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "Error: The log cannot be replayed (1 problem; nothing was written):",
        f"  {bad}:2: the event's time 't' is NaN: not a finite number of seconds since the log's start",
    ]


def test_speeds() -> None:
    speed = SpeedType()
    assert speed.convert("2.5", None, None) == 2.5
    assert speed.convert("MAX", None, None) is None
    for wrong in ("0", "-1", "fast"):
        with pytest.raises(click.BadParameter):
            speed.convert(wrong, None, None)
