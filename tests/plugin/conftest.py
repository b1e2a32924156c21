"""
Fixtures for the plugin's own tests: inner pytest runs (pytester), and a served simulator for --kopf-real.

What they fake: the real cluster of ``--kopf-real``, by a simulator served on 127.0.0.1 (HTTPS with a token,
in a thread, or ``kopf-sim serve`` in a process of its own) with a kubeconfig for it. The inner runs do not
see tests/conftest.py: they get only the plugin's fixtures, as a user's project would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.serving import ServedApp
from tests.serving import served_simulator

# The pytester plugin is enabled in tests/conftest.py (pytest_plugins is not allowed in nested conftests).

# The inner runs must not see the outer project's ini (asyncio_mode etc.); looptime's plugin needs
# pytest-asyncio, so it is disabled together with it.
NO_ASYNCIO = ("-p", "no:asyncio", "-p", "no:looptime_plugin")
# Always: no cache files; no hypothesis plugin (it imports hypothesis anew in every inner run: seconds).
BASE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
CONFIGS = {
    "no-asyncio": (NO_ASYNCIO, ""),
    "asyncio-strict": ((), "asyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"),
    "asyncio-auto": ((), "asyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"),
}


@dataclasses.dataclass
class ServedCluster:
    cluster: Cluster
    kubeconfig: Path
    url: str


@pytest.fixture
def served_cluster(tmp_path: Path) -> Iterator[ServedCluster]:
    """A simulated cluster served on 127.0.0.1 (HTTPS, a token) from a thread, with its kubeconfig."""
    cluster = Cluster()
    kubeconfig = tmp_path / "served-kubeconfig"
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stopping: asyncio.Event | None = None
    served = ServedApp(build_app(cluster), tls=True, token="inner-token")

    async def serve() -> None:
        nonlocal stopping
        stopping = asyncio.Event()
        async with served:
            served.write_kubeconfig(kubeconfig)
            ready.set()
            await stopping.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the served cluster did not start"
    try:
        yield ServedCluster(cluster, kubeconfig, served.url)
    finally:
        assert stopping is not None
        loop.call_soon_threadsafe(stopping.set)
        thread.join(30)
        loop.close()


@contextlib.contextmanager
def kopf_sim_subprocess(kubeconfig: Path, *options: str) -> Iterator[Path]:
    """``kopf-sim serve`` on 127.0.0.1 (a free port) in a process of its own, its kubeconfig; stopped at the end."""
    with served_simulator(kubeconfig, *options) as served:
        yield served.kubeconfig
