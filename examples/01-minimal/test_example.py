"""The minimal operator greets a new object: its handler's result lands in the object's status."""

from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


async def test_a_new_object_is_greeted(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])

    await kopf_cluster.create(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "greeted"},
            "spec": {"field": "value"},
        }
    )
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "greeted", timeout=30, condition=lambda o: "create_fn" in o.get("status", {})
    )
    assert obj["status"]["create_fn"] == {"message": "hello, greeted"}
    assert "A new example 'greeted' with spec={'field': 'value'}" in kopf_operator.logs

    await kopf_cluster.delete("kopfexamples", "greeted")
    await kopf_cluster.wait_gone("kopfexamples", "greeted", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None
