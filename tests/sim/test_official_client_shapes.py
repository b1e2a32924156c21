"""The official client's typed models accept every answer of a served simulator (over HTTPS on 127.0.0.1).

Every verb of every kind that the workload controllers touch (see ``tests/official_shapes.py``), with the
built-in controllers and without them; then the shapes fixed for the official client one by one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from kopf_sim.controllers import ControllerSettings
from tests.official_shapes import KINDS, ShapeAudit, write_with_nulls

from .test_official_client import ServerThread

#: Real time: the simulated machines start, run and stop pods at once.
INSTANT = ControllerSettings(pod_start_delay=0, pod_ready_delay=0, pod_run_time=0, pod_stop_delay=0)


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    thread = ServerThread(controllers=getattr(request, "param", None))
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


@pytest.fixture
def kubeconfig(served: ServerThread, tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    served.served.write_kubeconfig(path)
    return str(path)


@pytest.fixture
def client(kubeconfig: str) -> Iterator[kubernetes.client.ApiClient]:
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    assert configuration.client_side_validation  # the default: the models check what they are given
    with kubernetes.client.ApiClient(configuration) as api_client:
        yield api_client


def settled(client: kubernetes.client.ApiClient, timeout: float = 30) -> None:
    """Wait (in real time) until the controllers have run the workloads: every kind has a ready pod."""
    apps, batch = kubernetes.client.AppsV1Api(client), kubernetes.client.BatchV1Api(client)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = (
            all(d.status.available_replicas == 2 for d in apps.list_namespaced_deployment("default").items)
            and all(s.status.ready_replicas == 1 for s in apps.list_namespaced_stateful_set("default").items)
            and all(d.status.number_ready == 3 for d in apps.list_namespaced_daemon_set("default").items)
            and all(j.status.succeeded == 1 for j in batch.list_namespaced_job("default").items)
        )
        if ready:
            return
        time.sleep(0.1)
    raise AssertionError(f"The workloads have not settled in {timeout} s.")


@pytest.mark.parametrize("served", [INSTANT], indirect=True, ids=["controllers"])
def test_every_verb_with_the_controllers(
    served: ServerThread, client: kubernetes.client.ApiClient, kubeconfig: str
) -> None:
    audit = ShapeAudit(client)
    audit.begin("a", kubeconfig)
    settled(client)
    counts = audit.finish("a")
    assert audit.problems == []
    assert audit.calls > 300
    assert counts["pods"] >= 5 * 2 + 5 + 5 * 3 + 5  # deployments, statefulsets, daemonsets, jobs
    assert counts["replicasets"] == 10  # 5 made by the deployments
    assert counts["controllerrevisions"] == 5 + 6  # of the statefulsets and daemonsets (one with nulls)
    assert counts["endpointslices"] == 5 and counts["persistentvolumes"] == 10


def test_every_verb_without_the_controllers(
    served: ServerThread, client: kubernetes.client.ApiClient, kubeconfig: str
) -> None:
    audit = ShapeAudit(client)
    audit.begin("a", kubeconfig)
    counts = audit.finish("a")
    assert audit.problems == []
    assert audit.calls > 300
    assert counts["pods"] == 5 + 1 and counts["controllerrevisions"] == 0


def test_a_deleted_service_is_answered_with_the_service(
    served: ServerThread, client: kubernetes.client.ApiClient
) -> None:
    core = kubernetes.client.CoreV1Api(client)
    created = core.create_namespaced_service("default", ShapeAudit(client).body("services", "web"))
    deleted = core.delete_namespaced_service("web", "default")
    assert isinstance(deleted, kubernetes.client.V1Service)
    assert deleted.metadata.uid == created.metadata.uid
    assert deleted.metadata.resource_version == created.metadata.resource_version  # as it was stored
    assert deleted.spec.cluster_ip == created.spec.cluster_ip
    claim = core.create_namespaced_persistent_volume_claim(
        "default", ShapeAudit(client).body("persistentvolumeclaims", "c")
    )
    assert isinstance(
        core.delete_namespaced_persistent_volume_claim("c", "default"), kubernetes.client.V1PersistentVolumeClaim
    )
    assert claim.status.phase == "Pending"
    config_map = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    status = core.delete_namespaced_config_map("cm", "default")  # the other kinds answer with a Status
    assert status["kind"] == "Status" and status["details"]["uid"] == config_map.metadata.uid


def test_the_statuses_have_the_fields_that_go_always_writes(
    served: ServerThread, client: kubernetes.client.ApiClient
) -> None:
    audit = ShapeAudit(client)
    apps = kubernetes.client.AppsV1Api(client)
    statefulset = apps.create_namespaced_stateful_set("default", audit.body("statefulsets", "db"))
    assert (statefulset.status.replicas, statefulset.status.available_replicas) == (0, 0)
    daemonset = apps.create_namespaced_daemon_set("default", audit.body("daemonsets", "agent"))
    assert (daemonset.status.current_number_scheduled, daemonset.status.desired_number_scheduled) == (0, 0)
    assert (daemonset.status.number_misscheduled, daemonset.status.number_ready) == (0, 0)
    replicaset = apps.create_namespaced_replica_set("default", audit.body("replicasets", "rs"))
    assert replicaset.status.replicas == 0
    # A status written without them (or with nulls) gets them again, as Go writes its zero values.
    raw = apps.patch_namespaced_stateful_set_status(
        "db", "default", {"status": {"replicas": None}}, _content_type="application/merge-patch+json"
    )
    assert raw.status.replicas == 0
    service = kubernetes.client.CoreV1Api(client).create_namespaced_service("default", audit.body("services", "s"))
    assert service.status.load_balancer is not None


def test_empty_quantities_of_a_rendered_template_are_zeros(
    served: ServerThread, client: kubernetes.client.ApiClient, kubeconfig: str
) -> None:
    write_with_nulls(kubeconfig, "default", "agent")
    daemonset = kubernetes.client.AppsV1Api(client).read_namespaced_daemon_set("agent", "default")
    [container] = daemonset.spec.template.spec.containers
    assert container.resources.limits == {"cpu": "0", "memory": "128Mi"}
    assert container.resources.requests == {"memory": "0"}
    assert container.env is None  # a null list is no list
    assert daemonset.metadata.labels is None and daemonset.metadata.annotations == {"a": "1"}
    pod = kubernetes.client.CoreV1Api(client).read_namespaced_pod("agent", "default")
    assert pod.spec.containers[0].resources.limits == {"cpu": "0"}
    assert pod.spec.containers[0].resources.requests == {"cpu": "0"}  # a pod requests what it limits
    assert pod.status.qos_class == "BestEffort"  # zero quantities do not count


def test_quantities_are_written_back_in_their_canonical_form(
    served: ServerThread, client: kubernetes.client.ApiClient, kubeconfig: str
) -> None:
    import pykube

    api = pykube.HTTPClient(pykube.KubeConfig.from_file(kubeconfig))
    limits = {"cpu": 0.5, "memory": "1.5Gi", "ephemeral-storage": 2000, "example.com/gpu": 1}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sized", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": limits}}]},
    }
    pykube.Pod(api, body).create()  # numbers as YAML gives them, which the typed client cannot send
    pod = kubernetes.client.CoreV1Api(client).read_namespaced_pod("sized", "default")
    expected = {"cpu": "500m", "memory": "1536Mi", "ephemeral-storage": "2k", "example.com/gpu": "1"}
    assert pod.spec.containers[0].resources.limits == expected
    assert pod.status.qos_class == "Guaranteed"
    assert set(KINDS) >= {"pods"}
