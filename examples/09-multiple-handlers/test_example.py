"""Every handler of a cause runs; field handlers see the old and new values of their field only."""

from pathlib import Path

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


def has_status(*keys: str):
    return lambda obj: obj is not None and all(key in obj.get("status", {}) for key in keys)


async def test_handlers_per_cause_and_per_field(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    await kopf_cluster.create(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "stock"},
            "spec": {"field": "alice", "duration": "1m", "items": ["apples", "pears"]},
        }
    )

    obj = await kopf_cluster.wait_for(
        "kopfexamples",
        "stock",
        timeout=30,
        condition=has_status("count_items", "describe_owner", "items_changed/spec.items"),
    )
    assert obj["status"]["count_items"] == 2
    assert obj["status"]["describe_owner"] == "stock is owned by alice"
    # A field handler also sees the field appear when the object is created (from None to the list).
    assert obj["status"]["items_changed/spec.items"] == {"added": ["apples", "pears"], "removed": []}
    assert "last_changes" not in obj["status"]  # update handlers: not on creation

    await kopf_cluster.patch("kopfexamples", "stock", {"spec": {"field": "bob", "items": ["pears", "plums"]}})
    obj = await kopf_cluster.wait_for(
        "kopfexamples",
        "stock",
        timeout=30,
        condition=lambda o: (
            o["status"]["items_changed/spec.items"]["added"] == ["plums"]
            and "field" in o["status"].get("last_changes", {})
        ),
    )
    assert obj["status"]["items_changed/spec.items"] == {"added": ["plums"], "removed": ["apples"]}
    assert obj["status"]["last_changes"] == {"field": {"old": "alice", "new": "bob"}}
    assert "change spec.field: 'alice' -> 'bob'" in kopf_operator.logs
    assert "change spec.items: ['apples', 'pears'] -> ['pears', 'plums']" in kopf_operator.logs

    await kopf_cluster.patch("kopfexamples", "stock", {"spec": {"duration": None}})
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "stock", timeout=30, condition=lambda o: "duration" in o["status"]["last_changes"]
    )
    # The new value is None (the field is absent now): a merge patch stores no nulls, so "new" is absent too.
    assert obj["status"]["last_changes"]["duration"] == {"old": "1m"}
    assert obj["status"]["last_changes"]["field"] == {"old": "alice", "new": "bob"}  # kept from before
    assert "remove spec.duration: '1m' -> None" in kopf_operator.logs
    assert obj["status"]["count_items"] == 2  # creation handlers: once

    await kopf_cluster.delete("kopfexamples", "stock")
    await kopf_cluster.wait_gone("kopfexamples", "stock", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None
