"""The official client's typed models accept every answer of the test's simulated cluster, in process.

The same audit as against a served simulator (``tests/official_shapes.py``), through the plugin's
in-memory routing of the client's connections, in virtual time: with the built-in controllers (given
two virtual minutes to run the workloads, and the CronJobs to start Jobs) and without them.
"""

from __future__ import annotations

import asyncio
import os

import kubernetes
import pytest

from pytest_kopf.cluster import KopfCluster
from tests.official_shapes import ShapeAudit

pytestmark = pytest.mark.kopf_sim_only


async def audit(kopf_cluster: KopfCluster, *, settle: float) -> tuple[ShapeAudit, dict[str, int]]:
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(client_configuration=configuration)  # the test's cluster, by $KUBECONFIG
    assert configuration.host.endswith(".test") and configuration.client_side_validation
    with kubernetes.client.ApiClient(configuration) as client:
        shapes = ShapeAudit(client)
        await asyncio.to_thread(shapes.begin, "a", os.environ["KUBECONFIG"])  # sync clients: not in the loop
        await asyncio.sleep(settle)
        counts = await asyncio.to_thread(shapes.finish, "a")
    return shapes, counts


async def test_every_verb_with_the_controllers(kopf_cluster: KopfCluster) -> None:
    shapes, counts = await audit(kopf_cluster, settle=120)
    assert shapes.problems == []
    assert shapes.calls > 300
    assert counts["jobs"] > 5  # the CronJobs' too
    assert counts["replicasets"] == 10 and counts["controllerrevisions"] == 5 + 6
    assert counts["endpointslices"] == 5 and counts["persistentvolumes"] == 10


@pytest.mark.kopf_controllers("none")
async def test_every_verb_without_the_controllers(kopf_cluster: KopfCluster) -> None:
    shapes, counts = await audit(kopf_cluster, settle=0)
    assert shapes.problems == []
    assert shapes.calls > 300
    assert counts["pods"] == 5 + 1 and counts["controllerrevisions"] == 0 and counts["nodes"] == 0
