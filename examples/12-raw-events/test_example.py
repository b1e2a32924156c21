"""Event handlers see the listing, additions, modifications and deletions; a patch from them is applied."""

import asyncio
from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"
FIRST_SEEN = "example.kopf.dev/first-seen-as"


async def wait_for_log(kopf_operator, text: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while text not in kopf_operator.logs:  # noqa: ASYNC110 - polling the log: nothing else to wait on
            await asyncio.sleep(0.1)


def example(name: str) -> dict:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {}}


async def test_listed_added_modified_deleted(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_cluster.create(example("before"))  # exists before the operator starts: listed, not added
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])

    obj = await kopf_cluster.wait_for(
        "kopfexamples", "before", timeout=30, condition=lambda o: FIRST_SEEN in o["metadata"].get("annotations", {})
    )
    assert obj["metadata"]["annotations"][FIRST_SEEN] == "listed"
    await wait_for_log(kopf_operator, "Event #1 of before: None at version")
    await wait_for_log(kopf_operator, "Event #2 of before: MODIFIED")  # caused by the annotation's patch

    await kopf_cluster.create(example("after"))
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "after", timeout=30, condition=lambda o: FIRST_SEEN in o["metadata"].get("annotations", {})
    )
    assert obj["metadata"]["annotations"][FIRST_SEEN] == "ADDED"
    await wait_for_log(kopf_operator, f"Event #2 of after: MODIFIED at version {obj['metadata']['resourceVersion']}.")

    await kopf_cluster.delete("kopfexamples", "after")
    await kopf_cluster.wait_gone("kopfexamples", "after", timeout=30)
    await wait_for_log(kopf_operator, "Event #3 of after: DELETED")
    assert "Event #4 of after" not in kopf_operator.logs  # the annotation was stamped once, no loop

    await kopf_cluster.delete("kopfexamples", "before")
    await kopf_cluster.wait_gone("kopfexamples", "before", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_only_labelled_configmaps(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])

    await kopf_cluster.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}, "data": {"a": "1"}}
    )
    await kopf_cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "labels": {"example.kopf.dev/watched": "yes"}},
            "data": {"colour": "blue"},
        }
    )
    # ADDED, or None if the operator's watch of ConfigMaps begins after the creation and lists it.
    await wait_for_log(kopf_operator, "with keys ['colour'].")
    await kopf_cluster.patch("configmaps", "settings", {"data": {"size": "XL"}})
    await wait_for_log(kopf_operator, "ConfigMap settings: MODIFIED with keys ['colour', 'size'].")
    await kopf_cluster.delete("configmaps", "settings")
    await wait_for_log(kopf_operator, "ConfigMap settings: DELETED")
    assert "ConfigMap ignored" not in kopf_operator.logs

    await kopf_operator.stop()
    assert kopf_operator.exception is None
