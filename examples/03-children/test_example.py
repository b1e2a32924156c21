"""The children example, with the official sync client and with kubernetes_asyncio: in sim and real modes alike."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


@pytest.mark.parametrize("operator", ["example.py", "example_asyncio.py"])
async def test_children_are_made_adopted_and_collected(kopf_cluster, kopf_operator, operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / operator])
    parent = await kopf_cluster.create(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "web"},
            "spec": {"image": "nginx:1.27"},
        }
    )
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "web", timeout=60, condition=lambda o: "create_children" in o.get("status", {})
    )
    assert obj["status"]["create_children"] == {"deployment": "web", "service": "web"}

    for resource in ("deployments", "services"):
        child = await kopf_cluster.get(resource, "web")
        assert child is not None, resource
        owners = child["metadata"]["ownerReferences"]
        assert [(owner["kind"], owner["uid"]) for owner in owners] == [("KopfExample", parent["metadata"]["uid"])]
        assert child["metadata"]["labels"]["app.kubernetes.io/name"] == "web"
    deployment = await kopf_cluster.get("deployments", "web")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"

    await kopf_cluster.delete("kopfexamples", "web")
    await kopf_cluster.wait_gone("kopfexamples", "web", timeout=60)
    await kopf_cluster.wait_gone("deployments", "web", timeout=60)  # garbage-collected with their owner
    await kopf_cluster.wait_gone("services", "web", timeout=60)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


@pytest.mark.kopf_sim_only  # the simulated cluster's faults: a response lost after the Deployment was made
@pytest.mark.parametrize("operator", ["example.py", "example_asyncio.py"])
async def test_a_retry_keeps_the_children_an_earlier_attempt_has_made(kopf_cluster, kopf_operator, operator):
    await kopf_cluster.apply(CRD)
    kopf_cluster.sim.faults.error(504, applied=True, method="POST", path="/deployments$", count=1)
    await kopf_operator.start(paths=[HERE / operator])
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "web"}})
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "web", timeout=300, condition=lambda o: "create_children" in o.get("status", {})
    )
    assert obj["status"]["create_children"] == {"deployment": "web", "service": "web"}
    assert await kopf_cluster.get("services", "web") is not None
    assert any("504" in record.getMessage() for record in kopf_operator.records)  # the first attempt failed
