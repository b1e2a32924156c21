"""Same seed, same trace: API requests, watch events (changes), handler calls (logs) and faults, byte for byte."""

from __future__ import annotations

import os
import random
import secrets
import uuid
from pathlib import Path
from typing import Any

import hypothesis
from hypothesis import strategies as st

import kopf
from pytest_kopf.stateful import OperatorSpec, World
from pytest_kopf.strategies import (
    Action,
    Advance,
    ApiErrors,
    CrashAfterWrites,
    Create,
    Delete,
    PatchSpec,
    Settle,
    StaleReads,
    WithheldEvents,
    action_sequences,
)

GALLERY = Path(__file__).parent / "gallery"
#: Two operators: one that patches its child, one that replaces its own (a PUT naming the version read: 409-able).
SPEC = OperatorSpec(
    paths=(str(GALLERY / "missed_state_ok.py"), str(GALLERY / "replace_ok.py")), manifests=(str(GALLERY / "crd.yaml"),)
)
#: Operators that draw random passwords (secrets.token_urlsafe) and ids (uuid.uuid4): seeded per world.
RANDOM_SPEC = OperatorSpec(
    paths=(str(GALLERY / "random_credentials_ok.py"), str(GALLERY / "uuid_status_ok.py")),
    manifests=(str(GALLERY / "crd.yaml"),),
)


def drawing_registry() -> kopf.OperatorRegistry:
    """Handlers that write a value of every source of randomness into the status: in the loop and in a thread."""
    registry = kopf.OperatorRegistry()

    def drawn() -> dict[str, Any]:
        return {
            "random": random.random(),
            "randint": random.randint(0, 10**9),
            "urandom": os.urandom(8).hex(),
            "token": secrets.token_urlsafe(8),
            "uuid4": str(uuid.uuid4()),
            "uuid1": str(uuid.uuid1()),
        }

    @kopf.on.create("gadgets", registry=registry)
    async def in_the_loop(patch: kopf.Patch, **_: Any) -> None:
        patch.status["loop"] = drawn()

    @kopf.on.create("gadgets", registry=registry)
    def in_a_thread(patch: kopf.Patch, **_: Any) -> None:
        patch.status["thread"] = drawn()

    return registry


#: An operator that draws from random, os.urandom, secrets and uuid (4 and 1), in its loop and in a thread.
DRAWING_SPEC = OperatorSpec(registry=drawing_registry, manifests=(str(GALLERY / "crd.yaml"),))
BODY = {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": "obj-0", "namespace": "default"}}
RESOURCE = "gadgets.checks.example"


def trace_of(steps: list[Action], spec: OperatorSpec = SPEC) -> str:
    world = World(spec)
    try:
        for step in steps:
            world.trace.step(step.code(), restarts=step.restarts)
            world.run(step.apply(world))
        world.run(world.settle())
        return world.trace.text()
    finally:
        world.close()


#: One of each fault kind, and a crash, amid the users' actions.
EVERY_FAULT_KIND: list[Action] = [
    Create({**BODY, "spec": {"size": 1}}),
    Advance(3),
    ApiErrors(503, "PATCH", "gadgets", 2),
    ApiErrors(409, None, "configmaps", 1),
    PatchSpec(RESOURCE, "obj-0", {"size": 2}),
    Advance(10),
    StaleReads(2, 3),
    WithheldEvents("gadgets", 5.0, True, 1),
    PatchSpec(RESOURCE, "obj-0", {"size": 3, "mode": "fast"}),
    CrashAfterWrites(2),
    Delete(RESOURCE, "obj-0"),
    Create({**BODY, "spec": {"size": 4}}),
    Settle(),
]


def test_every_fault_kind_gives_the_same_trace_twice() -> None:
    first, second = trace_of(EVERY_FAULT_KIND), trace_of(EVERY_FAULT_KIND)
    assert first == second
    for kind in ("request ", "change ", "log ", "fault "):
        assert f" {kind}" in first
    for fault in ("error 503", "conflict 409", "stale read", "withhold events", "crash after write"):
        assert fault in first


@hypothesis.settings(max_examples=5, stateful_step_count=10, deadline=None)
@hypothesis.given(st.data())
def test_generated_sequences_give_the_same_trace_twice(data: st.DataObject) -> None:
    steps = data.draw(
        action_sequences(
            RESOURCE,
            manifests=_crds(),
            max_steps=8,
            names=["obj-0", "obj-1"],
            checks=["retries", "crash-restart", "stale-reads", "withheld-events"],
        )
    )
    assert trace_of(steps) == trace_of(steps)


def _crds() -> list[dict[str, object]]:
    import yaml

    return list(yaml.safe_load_all((GALLERY / "crd.yaml").read_text()))


def test_the_same_trace_in_two_processes_with_different_hash_seeds() -> None:
    """Nothing in a trace depends on the process: its hash seed, its history, its ids and addresses."""
    import os
    import subprocess
    import sys

    root = Path(__file__).parent.parent.parent
    code = "import sys; from tests.checks.test_determinism import traces; sys.stdout.write(traces())"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        for seed in ("1", "2")
    ]
    outputs = [process.communicate(timeout=300)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0]
    assert outputs[0] == outputs[1] == traces()  # and the same as in this process
    assert "fault crash after write" in outputs[0]
    assert '"password": "' in outputs[0] and '"instanceId": "' in outputs[0]  # the seeded random values, traced
    assert '"loop": {' in outputs[0] and '"thread": {' in outputs[0]
    for source in ("random", "randint", "urandom", "token", "uuid4", "uuid1"):
        assert f'"{source}": ' in outputs[0], source  # the values drawn, traced


def traces() -> str:
    """The traces of the gallery's operator, of two that draw passwords and ids, and of one that draws from all."""
    return "\n=====\n".join(trace_of(EVERY_FAULT_KIND, spec) for spec in (SPEC, RANDOM_SPEC, DRAWING_SPEC))
