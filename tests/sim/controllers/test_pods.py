"""Pods on the simulated nodes: scheduling, phases in virtual time, fates, restarts, graceful deletion."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kopf_sim.controllers import ControllerManager, Fate
from kopf_sim.kube.printers import pod_restarts, pod_status
from pytest_kopf.cluster import KopfCluster

from .workloads import condition, pod, ready

JsonDict = dict[str, Any]


def now() -> float:
    return asyncio.get_running_loop().time()


async def get_pod(kopf_cluster: KopfCluster, name: str) -> JsonDict:
    obj = await kopf_cluster.get("pods", name)
    assert obj is not None
    return obj


def container_state(obj: JsonDict) -> JsonDict:
    return dict(obj["status"]["containerStatuses"][0]["state"])


async def test_a_few_ready_nodes_at_start(kopf_cluster: KopfCluster) -> None:
    nodes = await kopf_cluster.list("nodes")
    assert [n["metadata"]["name"] for n in nodes] == ["node-1", "node-2", "node-3"]
    for node in nodes:
        assert condition(node, "Ready") == "True"
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == node["metadata"]["name"]
        assert node["status"]["nodeInfo"]["kubeletVersion"] == kopf_cluster.sim.store.version
        assert node["status"]["allocatable"]["pods"] == "110"
        assert [m["manager"] for m in node["metadata"]["managedFields"]] == ["kubelet"]


async def test_pending_running_ready_after_the_delays(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(pod("web"))
    await asyncio.sleep(0.5)
    obj = await get_pod(kopf_cluster, "web")
    assert obj["spec"]["nodeName"] == "node-1"
    assert obj["status"]["phase"] == "Pending"
    assert container_state(obj) == {"waiting": {"reason": "ContainerCreating"}}
    assert condition(obj, "PodScheduled") == "True"
    assert obj["status"]["hostIP"] == "172.18.0.2"
    assert pod_status(obj, kopf_cluster.sim.now) == "ContainerCreating"

    obj = await kopf_cluster.wait_for("pods", "web", condition=lambda p: p["status"]["phase"] == "Running")
    assert now() == 1.0  # pod_start_delay
    assert obj["status"]["podIP"].startswith("10.244.1.") and obj["status"]["podIP"] != "10.244.1.1"  # node-1's
    assert not ready(obj)
    assert condition(obj, "PodReadyToStartContainers") == "True"

    obj = await kopf_cluster.wait_for("pods", "web", condition=ready)
    assert now() == 2.0  # + pod_ready_delay
    status = obj["status"]["containerStatuses"][0]
    assert status["ready"] and status["started"] and status["restartCount"] == 0
    assert status["imageID"].startswith("docker.io/library/nginx@sha256:")
    assert [c["type"] for c in obj["status"]["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    managers = {(m["manager"], m.get("subresource")) for m in obj["metadata"]["managedFields"]}
    # The scheduler binds through pods/binding, which writes no managed fields (as in the apiserver).
    assert managers == {("pytest-kopf", None), ("kubelet", "status")}


async def test_ready_on_time_when_the_float_sums_miss_the_tick(kopf_cluster: KopfCluster) -> None:
    # Started at 1.000002 s: 1.000002 + 1.0 is a hair after the tick of 2.000002 s, where the pod is due to be ready
    # (a timer for the hair's delay is due at once: the pod was reconciled over and over at that tick).
    assert 1.000002 + 1.0 > 2.000002
    await asyncio.sleep(0.000002)
    await kopf_cluster.create(pod("web"))
    await kopf_cluster.wait_for("pods", "web", condition=ready)
    assert now() == 2.000002  # on time: not a second late (after the spinning guard's pause)


async def test_the_timings_are_configurable(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    controllers.configure(pod_start_delay=5, pod_ready_delay=3)
    await kopf_cluster.create(pod("slow"))
    await kopf_cluster.wait_for("pods", "slow", condition=ready)
    assert now() == 8.0
    body = pod("probed")
    body["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"port": 80}, "initialDelaySeconds": 20}
    await kopf_cluster.create(body)
    start = now()
    await kopf_cluster.wait_for("pods", "probed", condition=ready)
    assert now() - start == 25.0  # the probe's initial delay is longer than the ready delay


async def test_pods_spread_over_the_nodes(kopf_cluster: KopfCluster) -> None:
    for index in range(6):
        await kopf_cluster.create(pod(f"p{index}"))
    await asyncio.sleep(0.5)
    placed = [p["spec"].get("nodeName") for p in await kopf_cluster.list("pods")]
    assert sorted(placed) == ["node-1", "node-1", "node-2", "node-2", "node-3", "node-3"]


async def test_selectors_taints_and_cordons_are_honoured(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(pod("picky", nodeSelector={"disk": "ssd"}))
    obj = await kopf_cluster.wait_for("pods", "picky", condition=lambda p: condition(p, "PodScheduled") == "False")
    scheduled = next(c for c in obj["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["reason"] == "Unschedulable"
    assert scheduled["message"].startswith(
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    )
    assert obj["status"]["phase"] == "Pending"

    await kopf_cluster.patch("nodes", "node-1", {"spec": {"unschedulable": True}})  # kubectl cordon
    await kopf_cluster.patch("nodes", "node-2", {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
    await kopf_cluster.patch("nodes", "node-3", {"metadata": {"labels": {"disk": "ssd"}}})
    obj = await kopf_cluster.wait_for("pods", "picky", condition=lambda p: p["spec"].get("nodeName"))
    assert obj["spec"]["nodeName"] == "node-3"
    for index in range(3):
        await kopf_cluster.create(pod(f"any{index}"))
    await asyncio.sleep(0.5)
    assert {p["spec"]["nodeName"] for p in await kopf_cluster.list("pods")} == {"node-3"}


async def test_a_node_added_later_takes_the_waiting_pods(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(pod("waiting", nodeSelector={"pool": "gpu"}))
    await asyncio.sleep(5)
    await kopf_cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "gpu-1", "labels": {"pool": "gpu"}},
            "spec": {"podCIDR": "10.244.9.0/24"},
        }
    )
    node = await kopf_cluster.wait_for("nodes", "gpu-1", condition=lambda n: condition(n, "Ready") == "True")
    assert node["status"]["nodeInfo"]["operatingSystem"] == "linux"  # its "kubelet" registered it
    obj = await kopf_cluster.wait_for("pods", "waiting", condition=ready)
    assert obj["spec"]["nodeName"] == "gpu-1"
    assert obj["status"]["podIP"].startswith("10.244.9.") and obj["status"]["podIP"] != "10.244.9.1"  # its CIDR's


@pytest.mark.parametrize(("policy", "phase", "restarts"), [("Never", "Failed", 0), ("OnFailure", "Running", 1)])
async def test_a_failing_container(
    kopf_cluster: KopfCluster, controllers: ControllerManager, policy: str, phase: str, restarts: int
) -> None:
    controllers.fate("app=job", Fate.fail(exit_code=3, after=4))
    await kopf_cluster.create(pod("runner", {"app": "job"}, restartPolicy=policy))
    await asyncio.sleep(16)  # started at 1, exited at 5; OnFailure: restarted at 15 (a 10 s back-off)
    obj = await get_pod(kopf_cluster, "runner")
    assert obj["status"]["phase"] == phase
    status = obj["status"]["containerStatuses"][0]
    assert status["restartCount"] == restarts
    terminated = status["state"].get("terminated") or status["lastState"]["terminated"]
    assert terminated["exitCode"] == 3
    assert terminated["reason"] == "Error"
    assert terminated["startedAt"] == "2026-01-01T00:00:01Z"
    assert terminated["finishedAt"] == "2026-01-01T00:00:05Z"


async def test_run_to_completion(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    await kopf_cluster.create(pod("default-run", restartPolicy="Never"))
    controllers.fate("app=long-run", Fate.succeed(after=30))
    await kopf_cluster.create(pod("long-run", restartPolicy="OnFailure"))
    await kopf_cluster.wait_for("pods", "default-run", condition=lambda p: p["status"]["phase"] == "Succeeded")
    assert now() == 2.0  # started at 1, ran pod_run_time (1 s)
    obj = await kopf_cluster.wait_for("pods", "long-run", condition=lambda p: p["status"]["phase"] == "Succeeded")
    assert now() == 31.0
    assert container_state(obj)["terminated"]["reason"] == "Completed"
    assert pod_status(obj, kopf_cluster.sim.now) == "Completed"
    assert condition(obj, "Ready") == "False"


async def test_crash_loop_with_the_kubelets_back_off(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    controllers.fate({"app": "crashy"}, Fate.crash_loop(after=2))
    await kopf_cluster.create(pod("crashy"))
    restarts_at: list[float] = []
    for expected in range(1, 5):
        await kopf_cluster.wait_for(
            "pods",
            "crashy",
            timeout=600,
            condition=lambda p, n=expected: p["status"]["containerStatuses"][0]["restartCount"] == n,
        )
        restarts_at.append(now())
    # Running at 1, exits at 3; back-offs of 10, 20, 40, 80 s between an exit and the next start.
    assert restarts_at == [13.0, 35.0, 77.0, 159.0]
    await asyncio.sleep(2.5)
    obj = await get_pod(kopf_cluster, "crashy")
    assert obj["status"]["phase"] == "Running"
    waiting = container_state(obj)["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert waiting["message"].startswith("back-off 2m40s restarting failed container=main pod=crashy_default(")
    assert pod_status(obj, kopf_cluster.sim.now) == "CrashLoopBackOff"
    assert pod_restarts(obj, kopf_cluster.sim.now) == "4 (0s ago)"


async def test_never_ready_and_back(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    rule = controllers.fate("app=shy", Fate.never_ready())
    await kopf_cluster.create(pod("shy"))
    await asyncio.sleep(100)
    obj = await get_pod(kopf_cluster, "shy")
    assert obj["status"]["phase"] == "Running"
    assert not ready(obj)
    assert (
        next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")["message"]
        == "containers with unready status: [main]"
    )
    controllers.fates.remove(rule)
    await kopf_cluster.wait_for("pods", "shy", condition=ready)
    assert now() == 101.0  # a ready delay after the fate changed


async def test_a_fate_set_on_running_pods_starts_when_set(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    await kopf_cluster.create(pod("steady"))
    await kopf_cluster.wait_for("pods", "steady", condition=ready)
    await asyncio.sleep(50)
    controllers.fate("app=steady", Fate.fail(after=3))
    obj = await kopf_cluster.wait_for("pods", "steady", condition=lambda p: not ready(p))
    assert now() == 55.0
    assert obj["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1


async def test_image_pull_errors(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    controllers.fate("app=broken", Fate.image_pull_error())
    await kopf_cluster.create(pod("broken"))
    await asyncio.sleep(1)
    obj = await get_pod(kopf_cluster, "broken")
    assert obj["status"]["phase"] == "Pending"
    assert container_state(obj)["waiting"]["reason"] == "ErrImagePull"
    await asyncio.sleep(10)
    obj = await get_pod(kopf_cluster, "broken")
    assert container_state(obj)["waiting"]["reason"] == "ImagePullBackOff"
    assert pod_status(obj, kopf_cluster.sim.now) == "ImagePullBackOff"


async def test_graceful_deletion_within_the_grace_period(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    controllers.fate("app=stubborn", Fate(stop_delay=1000))  # ignores SIGTERM: killed when the grace period ends
    await kopf_cluster.create(pod("stubborn", terminationGracePeriodSeconds=45))
    await kopf_cluster.create(pod("quick"))
    await kopf_cluster.wait_for("pods", "stubborn", condition=ready)
    await kopf_cluster.wait_for("pods", "quick", condition=ready)
    start = now()
    await kopf_cluster.delete("pods", "stubborn")
    await kopf_cluster.delete("pods", "quick")
    obj = await get_pod(kopf_cluster, "stubborn")
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 45
    assert obj["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:47Z"  # now + the grace period
    assert pod_status(obj, kopf_cluster.sim.now) == "Terminating"
    await kopf_cluster.wait_gone("pods", "quick")
    assert now() - start == 1.0  # pod_stop_delay
    await kopf_cluster.wait_gone("pods", "stubborn")
    assert now() - start == 45.0


async def test_forced_and_unscheduled_deletions_are_immediate(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(pod("forced"))
    await kopf_cluster.create(pod("nowhere", nodeSelector={"no": "such"}))
    await kopf_cluster.wait_for("pods", "forced", condition=ready)
    cluster = kopf_cluster.sim.store
    pods = cluster.resource("", "v1", "pods")
    result = cluster.delete(pods, "default", "forced", {"gracePeriodSeconds": 0})
    assert result["kind"] == "Pod"  # removed at once, and answered with the pod, as the apiserver answers for pods
    assert "deletionTimestamp" not in result["metadata"]
    assert await kopf_cluster.get("pods", "forced") is None
    await kopf_cluster.delete("pods", "nowhere")
    assert await kopf_cluster.get("pods", "nowhere") is None


async def test_a_second_deletion_shortens_the_grace_period(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    controllers.fate("app=slow", Fate(stop_delay=1000))
    await kopf_cluster.create(pod("slow"))
    await kopf_cluster.wait_for("pods", "slow", condition=ready)
    pods = kopf_cluster.sim.store.resource("", "v1", "pods")
    kopf_cluster.sim.store.delete(pods, "default", "slow", {})
    assert (await get_pod(kopf_cluster, "slow"))["metadata"]["deletionGracePeriodSeconds"] == 30
    kopf_cluster.sim.store.delete(pods, "default", "slow", {"gracePeriodSeconds": 100})  # never longer
    assert (await get_pod(kopf_cluster, "slow"))["metadata"]["deletionGracePeriodSeconds"] == 30
    kopf_cluster.sim.store.delete(pods, "default", "slow", {"gracePeriodSeconds": 5})
    assert (await get_pod(kopf_cluster, "slow"))["metadata"]["deletionGracePeriodSeconds"] == 5
    start = now()
    await kopf_cluster.wait_gone("pods", "slow")
    assert now() - start == 5.0


@pytest.mark.kopf_controllers(False)
async def test_a_bare_apiserver_keeps_a_bound_pod_terminating(kopf_cluster: KopfCluster) -> None:
    assert await kopf_cluster.list("nodes") == []
    await kopf_cluster.create(pod("bound", nodeName="somewhere"))
    await kopf_cluster.create(pod("unbound"))
    await kopf_cluster.delete("pods", "unbound")
    assert await kopf_cluster.get("pods", "unbound") is None
    await kopf_cluster.delete("pods", "bound")
    await asyncio.sleep(3600)
    obj = await get_pod(kopf_cluster, "bound")  # no kubelet to stop it
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["status"]["phase"] == "Pending"


async def test_pods_of_a_deleted_node_are_collected(kopf_cluster: KopfCluster) -> None:
    for index in range(3):
        await kopf_cluster.create(pod(f"p{index}"))
    await asyncio.sleep(5)
    await kopf_cluster.delete("nodes", "node-2")
    await asyncio.sleep(0.5)
    assert sorted(p["spec"]["nodeName"] for p in await kopf_cluster.list("pods")) == ["node-1", "node-3"]


async def test_init_containers_complete_first(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(pod("init", initContainers=[{"name": "setup", "image": "busybox"}]))
    await asyncio.sleep(0.5)
    obj = await get_pod(kopf_cluster, "init")
    assert condition(obj, "Initialized") == "False"
    assert obj["status"]["initContainerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    obj = await kopf_cluster.wait_for("pods", "init", condition=ready)
    assert obj["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


async def test_an_idle_cluster_has_no_timers(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    await kopf_cluster.create(pod("idle"))
    await kopf_cluster.wait_for("pods", "idle", condition=ready)
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    timers = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
    assert timers == []
    assert controllers.keys("pods") == []
