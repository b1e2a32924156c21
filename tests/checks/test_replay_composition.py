"""A recorded incident (a watch-event log of kopf_sim.recording.eventlog) composed with generated actions and faults.

As the starting state of every example (``initial_steps=[ReplayLog(...)]``), or as one of the users' actions
(``logs=[...]``): the checks then continue the incident with crashes, faults and more changes; a failure's
reproduction replays the log too. The operator & log: ``examples/06-replay`` (a real recorded incident).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kopf.checks import check_operator
from pytest_kopf.stateful import OperatorMachine
from pytest_kopf.strategies import Create, PatchSpec, ReplayLog

from .test_gallery import INNER_PYTEST

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
OPERATOR = EXAMPLES / "06-replay" / "example.py"
INCIDENT = EXAMPLES / "06-replay" / "incident.jsonl"
CRD = EXAMPLES / "crd.yaml"
RESOURCE = "kopfexamples.kopf.dev"
#: The incident up to its flapping (the object there, painted blue, repainted green, then blue again).
MID_INCIDENT = ReplayLog(str(INCIDENT), until=4.5)


def test_a_recorded_incident_as_the_starting_state_continued_by_crashes_and_changes() -> None:
    report = check_operator(
        paths=[OPERATOR],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["convergence", "crash-restart"],
        initial_steps=[MID_INCIDENT],
        names=["flappy"],
        max_examples=4,
        max_steps=5,
    )
    assert report.examples >= 8  # 4 examples per check, each starting from the incident


def test_a_recorded_incident_as_one_of_the_users_actions() -> None:
    report = check_operator(
        paths=[OPERATOR],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["convergence"],
        logs=[INCIDENT],
        names=["flappy"],
        max_examples=6,
        max_steps=5,
    )
    assert report.examples >= 6


def test_the_reproduction_replays_the_incident_and_passes_for_a_correct_operator(pytester: pytest.Pytester) -> None:
    machine = OperatorMachine.configured(
        "Incident",
        paths=[OPERATOR],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["crash-restart"],
        initial_steps=[MID_INCIDENT],
        names=["flappy"],
    )
    steps = [
        PatchSpec(RESOURCE, "flappy", {"field": "red"}),
        Create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "flappy"}}),
    ]
    text = machine.reproduce(steps, "crash-restart")
    assert f"await tolerate(kopf_cluster.replay({str(INCIDENT)!r}, speed=None, until=4.5))" in text
    assert "EXPECTED = " in text and "'red'" in text  # the incident's object, repainted red in the fault-free run
    pytester.makepyfile(test_reproduction=text)
    result = pytester.runpytest_inprocess(*INNER_PYTEST)
    assert result.ret == 0, result.stdout.str()


def test_a_replay_refused_is_a_no_op_as_a_users_action_would_be() -> None:
    from pytest_kopf.driving import Refusal
    from pytest_kopf.stateful import OperatorSpec, World

    world = World(OperatorSpec(paths=(str(OPERATOR),), manifests=(str(CRD),)))
    try:
        assert world.run(MID_INCIDENT.apply(world)) == "ok"
        assert world.run(MID_INCIDENT.apply(world)) == "ok"  # the object is there: the replay goes on from it
        world.run(world.cluster.patch(RESOURCE, "flappy", {"metadata": {"finalizers": ["example.com/held"]}}))
        world.run(world.cluster.delete(RESOURCE, "flappy"))  # held by a finalizer: being deleted
        refused = world.run(MID_INCIDENT.apply(world))
        assert isinstance(refused, Refusal) and refused.code == 409, refused
        obj = world.run(world.cluster.get(RESOURCE, "flappy"))
        assert obj is not None and obj["spec"] == {"field": "blue"} and obj["metadata"]["deletionTimestamp"]
    finally:
        world.close()


def test_a_bad_log_fails_before_any_example_naming_its_line(tmp_path: Path) -> None:
    """Not as a failing example (shrunk, with a reproduction) found only when a replay of it happens to be drawn."""
    from kopf_sim.recording.replaying import LogError

    bad = tmp_path / "bad.jsonl"
    bad.write_text(INCIDENT.read_text().replace('"t":0.986148', '"t":NaN', 1))
    for options in [{"logs": [bad]}, {"initial_steps": [ReplayLog(str(bad))]}]:
        with pytest.raises(LogError, match=rf"{bad}:2: the event's time 't' is NaN: not a finite number"):
            check_operator(paths=[OPERATOR], manifests=[CRD], resources=[RESOURCE], max_examples=1, **options)
