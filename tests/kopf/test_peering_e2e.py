"""End to end in the simulated cluster: a paused operator's daemons & timers start again when the pause ends."""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path
from typing import Any

import kopf
from pytest_kopf.client import Client
from pytest_kopf.operator import KopfOperator

ROOT = Path(__file__).parent.parent.parent


async def test_daemons_and_timers_of_unchanged_objects_start_again_after_a_freeze(
    kopf_cluster: Client, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    log: list[tuple[str, str, float]] = []

    @kopf.daemon("kopfexamples", registry=registry)
    async def daemon_fn(name: str, stopped: kopf.DaemonStopped, **_: Any) -> None:
        log.append(("daemon", name, time.monotonic()))
        await stopped.wait()

    @kopf.timer("kopfexamples", registry=registry, interval=10)
    def timer_fn(name: str, **_: Any) -> None:
        log.append(("tick", name, time.monotonic()))

    await kopf_cluster.apply(str(ROOT / "examples" / "crd.yaml"))
    await kopf_cluster.apply(str(ROOT / "peering.yaml"))
    await kopf_cluster.apply(str(ROOT / "examples" / "peering-default.yaml"))
    settings = kopf.OperatorSettings()
    settings.peering.standalone = False
    await kopf_operator.start(registry=registry, settings=settings)
    for name in ["one", "two"]:
        await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}})
    await asyncio.sleep(25)

    # As `kopf freeze --lifetime=60` does: a record of a peer with a higher priority, for 60 seconds.
    frozen = time.monotonic()
    lastseen = datetime.datetime.now(datetime.UTC).isoformat()
    freezer = {"priority": 100, "lifetime": 60, "lastseen": lastseen}
    await kopf_cluster.patch("clusterkopfpeerings", "default", {"status": {"freezer@host": freezer}})
    await asyncio.sleep(300)

    assert "Resuming operations after the pause." in kopf_operator.logs
    resumed = [(kind, name) for kind, name, when in log if when > frozen + 60]
    assert ("daemon", "one") in resumed and ("daemon", "two") in resumed
    assert ("tick", "one") in resumed and ("tick", "two") in resumed
    paused = [(kind, name) for kind, name, when in log if frozen + 1 < when < frozen + 60]
    assert paused == []
