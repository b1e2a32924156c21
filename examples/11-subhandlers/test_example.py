"""Each item gets a sub-handler with its own retries and its own result in the status."""

from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


async def test_one_subhandler_per_item(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "shop"},
            "spec": {"items": ["db", "slow-cache"]},
        }
    )

    obj = await kopf_cluster.wait_for(
        "kopfexamples", "shop", timeout=30, condition=lambda o: "provision_items/slow-cache" in o.get("status", {})
    )
    assert obj["status"]["provision_items/db"] == {"item": "db", "attempts": 1}
    assert obj["status"]["provision_items/slow-cache"] == {"item": "slow-cache", "attempts": 3}
    logs = kopf_operator.logs
    assert logs.count("The item 'db' is provisioned") == 1  # not called again while its sibling retries
    assert logs.count("Handler 'provision_items/slow-cache' failed temporarily") == 2
    assert "Handler 'provision_items' succeeded." in logs  # once all its sub-handlers are done

    await kopf_cluster.patch("kopfexamples", "shop", {"spec": {"items": ["db", "slow-cache", "queue", "slow-web"]}})
    parent = "provision_added_items/spec.items"
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "shop", timeout=30, condition=lambda o: f"{parent}/slow-web" in o["status"]
    )
    assert obj["status"][f"{parent}/queue"] == {"item": "queue", "attempts": 1}
    assert obj["status"][f"{parent}/slow-web"] == {"item": "slow-web", "attempts": 3}
    assert kopf_operator.logs.count("The item 'db' is provisioned") == 1

    await kopf_cluster.delete("kopfexamples", "shop")
    await kopf_cluster.wait_gone("kopfexamples", "shop", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None
