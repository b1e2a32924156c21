"""
The built-in controllers' tests: a fresh simulated cluster per test (``kopf_cluster``), in virtual time.

What it fakes on top of the plugin's cluster: nothing; the controllers (and the kubelets of simulated
nodes, which fake the pods' containers) are started for every test here, as ``kopf-sim serve`` starts them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kopf_sim.controllers import ControllerManager
from pytest_kopf.cluster import KopfCluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/sim/controllers/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.kopf_sim_only)  # they steer the simulator itself


@pytest.fixture(autouse=True)
def controllers(kopf_cluster: KopfCluster) -> Iterator[ControllerManager]:
    """The cluster's controllers; no test may end with a controller having crashed."""
    manager = kopf_cluster.sim.controllers
    yield manager
    assert manager.failures == []
