"""Each handler serves only the objects and changes that pass its filters."""

from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"
FILTERED = {
    "gold_support",
    "extra_capacity",
    "process_items",
    "empty_trial",
    "special_field/spec.field",
    "published/spec.field",
    "field_removed/spec.field",
}


def example(name: str, labels=None, annotations=None, **spec: object) -> dict:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": spec,
    }


async def handled(kopf_cluster, name: str, reason: str = "create", field: str | None = None) -> dict:
    """The results of the filtered handlers once the object is handled (``summary`` runs the last)."""
    expected = f"{reason} with field={field!r}"
    obj = await kopf_cluster.wait_for(
        "kopfexamples", name, timeout=30, condition=lambda o: o["status"].get("summary") == expected
    )
    return {key: value for key, value in obj["status"].items() if key in FILTERED}


async def test_creation_filters(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(example("big-gold", labels={"tier": "gold", "size": "12"}, items=["a", "b"]))
    await kopf_cluster.create(example("small-silver", labels={"tier": "silver", "size": "3"}, field="special"))
    await kopf_cluster.create(
        example("paused", labels={"size": "many"}, annotations={"example.kopf.dev/paused": ""}, items=["a"])
    )
    await kopf_cluster.create(example("trial-1"))

    assert await handled(kopf_cluster, "big-gold") == {
        "gold_support": "a support engineer is assigned",
        "extra_capacity": "capacity reserved for 12 units",
        "process_items": 2,
    }
    assert await handled(kopf_cluster, "small-silver", field="special") == {"special_field/spec.field": True}
    assert await handled(kopf_cluster, "paused") == {}  # an empty annotation is still present
    assert await handled(kopf_cluster, "trial-1") == {"empty_trial": "a trial with nothing to do"}

    for name in ("big-gold", "small-silver", "paused", "trial-1"):
        await kopf_cluster.delete("kopfexamples", name)
        await kopf_cluster.wait_gone("kopfexamples", name, timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_update_filters_on_old_and_new_values(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(example("post", field="draft"))
    assert await handled(kopf_cluster, "post", field="draft") == {}

    async def change(field: str | None) -> dict:
        await kopf_cluster.patch("kopfexamples", "post", {"spec": {"field": field}})
        return await handled(kopf_cluster, "post", "update", field)

    assert await change("review") == {}  # draft -> review: not published yet
    assert await change("draft") == {}
    assert await change("published") == {"published/spec.field": "announced"}  # draft -> published
    assert await change(None) == {"published/spec.field": "announced", "field_removed/spec.field": "was 'published'"}

    await kopf_cluster.delete("kopfexamples", "post")
    await kopf_cluster.wait_gone("kopfexamples", "post", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None
