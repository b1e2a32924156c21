"""Two whole operators with different peering priorities: the lower one pauses while the higher one runs.

Each operator runs in its own thread and event loop, as documented for several operators in one process
(an operator treats the tasks of its loop as its own); so the cluster is served over loopback HTTP here.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import kopf
from kopf._cogs.structs.credentials import Vault
from kopf_sim.http.app import build_app
from kopf_sim.manifests import read_manifests
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.serving import ServedApp
from tests.helpers import example

from .conftest import ROOT, kex, peek


class OperatorThread:
    def __init__(self, name: str, priority: int, url: str, handled_by: list[tuple[str, str]]) -> None:
        self.registry = kopf.OperatorRegistry()
        self.settings = kopf.OperatorSettings()
        self.settings.peering.priority = priority
        self.stop_flag = threading.Event()
        self.url = url

        @kopf.on.create("kopfexamples", registry=self.registry, id=f"create_by_{name}")
        def create_fn(name: str, **_: Any) -> None:
            handled_by.append((self.name, name))

        self.name = name
        self.thread = threading.Thread(target=self._run, name=f"operator-{name}")
        self.thread.start()

    def _run(self) -> None:
        vault = Vault({"sim": kopf.ConnectionInfo(server=self.url)})
        asyncio.run(
            kopf.operator(
                registry=self.registry,
                settings=self.settings,
                vault=vault,
                clusterwide=True,
                stop_flag=self.stop_flag,
                identity=self.name,
            )
        )

    def stop(self) -> None:
        self.stop_flag.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


async def poll(fn: Callable[[], Any], timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := fn()):
        assert time.monotonic() < deadline, f"Not met in {timeout}s"
        await asyncio.sleep(0.05)
    return value


async def test_the_lower_priority_operator_pauses() -> None:
    cluster = Cluster()
    cluster.apply_manifests(read_manifests([ROOT / "examples" / "crd.yaml", ROOT / "peering.yaml"]))
    cluster.apply_manifests(read_manifests([ROOT / "examples" / "peering-default.yaml"]))

    def peers() -> dict[str, Any]:
        peering = cluster.peek(("kopf.dev", "clusterkopfpeerings"), None, "default") or {}
        return dict(peering.get("status") or {})

    handled_by: list[tuple[str, str]] = []
    async with ServedApp(build_app(cluster)) as served:
        # The higher one first: the lower one then sees it in its very first listing of the peering and
        # never unpauses (otherwise it could handle objects until its watch of the peering catches up).
        high = OperatorThread("high", 20, served.url, handled_by)
        low: OperatorThread | None = None
        try:
            await poll(lambda: set(peers()) == {"high"})
            low = OperatorThread("low", 10, served.url, handled_by)
            await poll(lambda: set(peers()) == {"low", "high"})
            cluster.create(kex(cluster), "default", example("first"))
            await poll(lambda: handled_by)
            await asyncio.sleep(1)  # give the lower one a chance to (wrongly) handle it too
            assert handled_by == [("high", "first")]

            await asyncio.to_thread(high.stop)
            assert set(peers()) == {"low"}
            cluster.create(kex(cluster), "default", example("second"))
            await poll(lambda: ("low", "second") in handled_by)
            assert handled_by == [("high", "first"), ("low", "second")]
            assert peek(cluster, "default", "first") is not None
        finally:
            await asyncio.to_thread(high.stop)
            if low is not None:
                await asyncio.to_thread(low.stop)
    assert peers() == {}
