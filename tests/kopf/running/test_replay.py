"""``kopf run --sim --replay LOG``: a recorded incident replayed into the embedded cluster of a running operator."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner

from kopf import cli
from kopf._core.reactor import running

from .test_processes import CRD, poll, stop

ROOT = pathlib.Path(__file__).parent.parent.parent.parent
INCIDENT = ROOT / "examples" / "06-replay"


@pytest.mark.kubectl
def test_the_incident_replayed_into_a_running_operator(tmp_path: pathlib.Path) -> None:
    output = tmp_path / "output.txt"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with output.open("w") as stream:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kopf",
                "run",
                "--standalone",
                "--sim",
                CRD,
                "--replay",
                str(INCIDENT / "incident.jsonl"),
                "--replay-speed",
                "4",
                "--verbose",
                str(INCIDENT / "example.py"),
            ],
            stdout=stream,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        try:
            poll(lambda: "Scrapping flappy" in output.read_text())
        finally:
            returncode = stop(proc)
    assert returncode == 0
    text = output.read_text()
    assert "Scrapping flappy, last painted blue." in text
    assert "Repainting" not in text
    assert (
        text.index("Serving the resource kopfexamples")
        < text.index("Replaying ")
        < text.index("Painting flappy blue.")
        < text.index("Replayed 6 changes of ")
    )


def fake_run(calls: list[dict[str, Any]]) -> Any:
    def run(**kwargs: Any) -> None:
        calls.append(kwargs)

    return run


def test_replay_needs_the_sim(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(running, "run", fake_run(calls))
    result = CliRunner().invoke(cli.main, ["run", "--replay", str(INCIDENT / "incident.jsonl")])
    assert result.exit_code == 2 and "--replay needs --sim" in result.output
    result = CliRunner().invoke(
        cli.main, ["run", "--sim", "--replay", str(INCIDENT / "incident.jsonl"), "--replay-speed", "fast"]
    )
    assert (
        result.exit_code == 2
        and "Invalid value for --replay-speed: 'fast' is neither a positive number" in result.output
    )
    assert calls == []


def test_a_bad_log_stops_the_run_before_it_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(running, "run", fake_run(calls))
    log = tmp_path / "bad.jsonl"
    log.write_text(
        '{"format": "kopf-sim-watch-log", "version": 1}\n'
        '{"t": 0, "resource": {"group": "kopf.dev", "version": "v1", "plural": "kopfexamples"}, '
        '"type": "ADDED", "object": {"metadata": {"name": "x"}}}\n'
    )
    result = CliRunner().invoke(cli.main, ["run", "--sim", "--replay", str(log)])  # no CRD loaded
    assert result.exit_code == 1
    assert f"{log}:2: unknown resource kopfexamples.kopf.dev (version v1)" in result.output
    assert calls == []


def test_a_log_going_back_in_time_stops_the_run_with_its_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """A reversed log replayed its deletion first; now its first line going back is named, with no traceback."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(running, "run", fake_run(calls))
    log = tmp_path / "backwards.jsonl"
    event = (
        '{{"t": {t}, "resource": {{"group": "", "version": "v1", "plural": "configmaps"}}, '
        '"type": "{kind}", "object": {{"metadata": {{"name": "x"}}}}}}\n'
    )
    log.write_text(
        '{"format": "kopf-sim-watch-log", "version": 1}\n'
        + event.format(t=9, kind="DELETED")
        + event.format(t=1, kind="ADDED")
    )
    result = CliRunner().invoke(cli.main, ["run", "--sim", "--replay", str(log)])
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert result.output.splitlines() == [
        "Error: The log cannot be replayed (1 problem; nothing was written):",
        f"  {log}:3: the time goes back: 't' is 1, before the 9 of line 2 "
        "(the events are in the order they happened: 't' never decreases)",
    ]
    assert calls == []
