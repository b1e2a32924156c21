"""The operator keeps a ConfigMap per object; its RBAC (rbac.yaml) is generated from this test (README.md)."""

from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


async def test_an_object_gets_its_settings(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(
        {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "web"}, "spec": {"field": "x"}}
    )
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "web", timeout=30, condition=lambda o: "create_settings" in o.get("status", {})
    )
    assert obj["status"]["create_settings"] == {"configmap": "web-settings"}
    configmap = await kopf_cluster.get("configmaps", "web-settings")
    assert configmap is not None and configmap["data"] == {"field": "x"}
    await kopf_operator.stop()
    assert kopf_operator.exception is None
