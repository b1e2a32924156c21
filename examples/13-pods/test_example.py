"""The team's pods are annotated and their phases tracked; other pods are left alone."""

import asyncio
from pathlib import Path

HERE = Path(__file__).parent
TEAM, CONTACT, PHASES = "example.kopf.dev/team", "example.kopf.dev/contact", "example.kopf.dev/phases"


def pod(name: str, labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]},
    }


def annotation(key: str, value: str):
    return lambda obj: obj is not None and (obj["metadata"].get("annotations") or {}).get(key) == value


async def set_phase(kopf_cluster, name: str, phase: str) -> None:
    """What the kubelet does as the pod starts and stops (nobody runs the pods in a simulated cluster)."""
    await kopf_cluster.patch("pods", name, {"status": {"phase": phase}}, subresource="status")


async def test_team_pods_are_served(kopf_cluster, kopf_operator):
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(pod("team-pod", {TEAM: "storage"}))
    await kopf_cluster.create(pod("other-pod", {}))

    obj = await kopf_cluster.wait_for(
        "pods", "team-pod", condition=annotation(CONTACT, "storage@example.com"), timeout=30
    )
    assert obj["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]  # for the deletion handler

    await set_phase(kopf_cluster, "team-pod", "Pending")
    await kopf_cluster.wait_for("pods", "team-pod", condition=annotation(PHASES, "Pending"), timeout=30)
    await set_phase(kopf_cluster, "team-pod", "Running")
    await kopf_cluster.wait_for("pods", "team-pod", condition=annotation(PHASES, "Pending,Running"), timeout=30)
    await set_phase(kopf_cluster, "other-pod", "Running")

    await kopf_cluster.delete("pods", "team-pod")
    await kopf_cluster.wait_gone("pods", "team-pod", timeout=30)
    assert "The quota of the pod team-pod is returned to the team storage." in kopf_operator.logs

    other = await kopf_cluster.get("pods", "other-pod")
    assert not any(
        key.startswith(("example.kopf.dev/", "kopf.zalando.org/")) for key in other["metadata"].get("annotations") or {}
    )  # not even the operator's own state
    await kopf_cluster.delete("pods", "other-pod")
    await kopf_cluster.wait_gone("pods", "other-pod", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_untracked_pods_keep_no_phases(kopf_cluster, kopf_operator):
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(pod("quiet-pod", {TEAM: "web"}, {"example.kopf.dev/untracked": "yes"}))
    await kopf_cluster.wait_for("pods", "quiet-pod", condition=annotation(CONTACT, "web@example.com"), timeout=30)
    await set_phase(kopf_cluster, "quiet-pod", "Running")
    await kopf_cluster.patch("pods", "quiet-pod", {"metadata": {"labels": {"touched": "yes"}}})  # one more event

    await kopf_cluster.wait_for(
        "pods", "quiet-pod", timeout=30, condition=lambda o: o["metadata"]["labels"].get("touched") == "yes"
    )
    await asyncio.sleep(1)
    obj = await kopf_cluster.get("pods", "quiet-pod")
    assert PHASES not in obj["metadata"]["annotations"]

    await kopf_cluster.delete("pods", "quiet-pod")
    await kopf_cluster.wait_gone("pods", "quiet-pod", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None
