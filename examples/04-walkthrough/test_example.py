"""The walkthrough's operator end to end: a claim, resized and relabelled, used by a pod, gone after it.

The operator calls the API with the official client, configured by kopf's login (as with ``kopf run``): in
sim mode, its requests reach the test's simulated cluster in memory, in virtual time, with quick simulated
pods; with ``--kopf-real``, the client uses the kubeconfig of the real cluster.
"""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TIMEOUT = 30  # seconds; the operator checks the claims every 0.2 s here, their grace period is 1 s

pytestmark = [pytest.mark.kopf_controllers(pod_start_delay=0.1, pod_ready_delay=0.1, pod_stop_delay=0.1)]


@pytest.fixture(autouse=True)
def often(monkeypatch):
    monkeypatch.setenv("EVC_INTERVAL", "0.2")


def evc(name, **spec):
    return {"apiVersion": "kopf.dev/v1", "kind": "EphemeralVolumeClaim", "metadata": {"name": name}, "spec": spec}


def writer(claim):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "writer", "labels": {"app": "writer"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "3600"],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def requested(pvc):
    return pvc["spec"]["resources"]["requests"]["storage"]


async def test_a_claim_lives_as_long_as_its_pods(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(str(HERE / "crd.yaml"))
    await kopf_operator.start(paths=[HERE / "example.py"])
    await kopf_cluster.create(evc("my-claim", size="1G", selector={"app": "writer"}, gracePeriod=1, safeTime=0))

    pvc = await kopf_cluster.wait_for("persistentvolumeclaims", "my-claim", timeout=TIMEOUT)
    assert requested(pvc) == "1G"
    assert pvc["metadata"]["ownerReferences"][0]["kind"] == "EphemeralVolumeClaim"
    await kopf_cluster.wait_for(
        "persistentvolumeclaims", "my-claim", timeout=TIMEOUT, condition=lambda c: c["status"]["phase"] == "Bound"
    )
    await kopf_cluster.wait_for(
        "ephemeralvolumeclaims",
        "my-claim",
        timeout=TIMEOUT,
        condition=lambda o: o["status"]["create_fn"]["pvc-name"] == "my-claim",
    )

    await kopf_cluster.patch("ephemeralvolumeclaims", "my-claim", {"spec": {"size": "2G"}})
    await kopf_cluster.wait_for(
        "persistentvolumeclaims", "my-claim", timeout=TIMEOUT, condition=lambda c: requested(c) == "2G"
    )
    await kopf_cluster.patch("ephemeralvolumeclaims", "my-claim", {"metadata": {"labels": {"owner": "me"}}})
    await kopf_cluster.wait_for(
        "persistentvolumeclaims",
        "my-claim",
        timeout=TIMEOUT,
        condition=lambda c: c["metadata"]["labels"]["owner"] == "me",
    )

    await kopf_cluster.create(writer("my-claim"))
    await kopf_cluster.wait_for(
        "ephemeralvolumeclaims",
        "my-claim",
        timeout=TIMEOUT,
        condition=lambda o: o["status"]["usage"]["pods"] == ["writer"],
    )
    await kopf_cluster.delete("pods", "writer")
    await kopf_cluster.wait_gone("pods", "writer", timeout=TIMEOUT)
    await kopf_cluster.wait_for(
        "ephemeralvolumeclaims",
        "my-claim",
        timeout=TIMEOUT,
        condition=lambda o: o is None or o["status"]["usage"]["goneSince"],
    )
    await kopf_cluster.wait_gone("ephemeralvolumeclaims", "my-claim", timeout=TIMEOUT)
    await kopf_cluster.wait_gone("persistentvolumeclaims", "my-claim", timeout=TIMEOUT)  # owned: collected
    await kopf_operator.stop()
    assert kopf_operator.exception is None
    assert "Deleting the claim: its pods are gone." in kopf_operator.logs


async def test_an_unused_claim_expires(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(str(HERE / "crd.yaml"))
    await kopf_operator.start(paths=[HERE / "example.py"])
    await kopf_cluster.create(evc("unused", size="1G", expiry=1, safeTime=0))
    await kopf_cluster.wait_for("persistentvolumeclaims", "unused", timeout=TIMEOUT)
    await kopf_cluster.wait_gone("ephemeralvolumeclaims", "unused", timeout=TIMEOUT)
    await kopf_operator.stop()
    assert "Deleting the claim: no pod used it in time." in kopf_operator.logs


async def test_a_claim_without_a_size_is_refused(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(str(HERE / "crd.yaml"))
    await kopf_operator.start(paths=[HERE / "example.py"])
    await kopf_cluster.create(evc("sizeless", expiry=3600))
    await kopf_cluster.wait_for(
        "ephemeralvolumeclaims",
        "sizeless",
        timeout=TIMEOUT,
        condition=lambda o: "kopf.zalando.org/last-handled-configuration" in o["metadata"]["annotations"],
    )  # handled, for good
    assert await kopf_cluster.get("persistentvolumeclaims", "sizeless") is None
    await kopf_operator.stop()
    assert "Size must be set. Got None." in kopf_operator.logs
