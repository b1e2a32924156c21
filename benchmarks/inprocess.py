"""A benchmark's scenario in-process, as a test under ``--kopf-sim`` has it: a fresh virtual-time loop, simulated
cluster and operator, all stopped and closed afterwards (for ``bench_threads.py`` and ``bench_reactor.py``)."""

from __future__ import annotations

import pathlib
import tempfile
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from kopf_sim.timing import virtualtime
from pytest_kopf._clocks import virtual_clocks
from pytest_kopf._running import TestLoop
from pytest_kopf.cluster import SimKopfCluster
from pytest_kopf.operator import KopfOperator

_T = TypeVar("_T")


def run_in_sim(
    scenario: Callable[[SimKopfCluster, KopfOperator], Coroutine[Any, Any, _T]], *, one_cpu: bool = True
) -> _T:
    """Run the scenario with the cluster & an operator not started yet; ``one_cpu``: see ``VirtualTimeLoop``."""
    with tempfile.TemporaryDirectory() as tmp, virtual_clocks():
        test_loop = TestLoop(virtual=True)
        assert isinstance(test_loop.loop, virtualtime.VirtualTimeLoop)
        test_loop.loop.one_cpu = one_cpu
        try:
            cluster = SimKopfCluster(loop=test_loop.loop, tmp_dir=lambda: pathlib.Path(tmp))
            test_loop.run(cluster.setup())
            operator = KopfOperator(cluster)
            try:
                return test_loop.run(scenario(cluster, operator))
            finally:
                test_loop.run(operator.stop())
                test_loop.run(cluster.teardown())
        finally:
            test_loop.close()
