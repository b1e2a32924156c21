"""Paginated lists and watches' starts under concurrent writes: each object once, as it was at the snapshot.

A walk of ``limit``/``continue`` pages reads every page at its first page's resourceVersion, whatever is
created, changed or deleted meanwhile (ahead of the walk or behind it, in and out of a label selection); a
watch from "now" sends the objects of its start, then the changes, each once. Both also with a cluster that
keeps almost nothing decoded (``hot_objects=1``), so that the stored bytes are what is read.
"""

from __future__ import annotations

import json
import random
from typing import Any
from unittest import mock

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_sim.kube import errors
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.store import buckets
from kopf_sim.store import cluster as cluster_module
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.stored import HotObjects, Stored
from kopf_sim.timing.clock import ManualClock, SeededUids

MERGE = "application/merge-patch+json"
NAMESPACES = ("alpha", "beta")


def populated(*, hot: int, objects: int = 30, seed: int = 0) -> Cluster:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(seed), hot_objects=hot)
    for namespace in NAMESPACES:
        cluster.create(cluster.resource("", "v1", "namespaces"), None, {"metadata": {"name": namespace}})
    rtype = cluster.resource("", "v1", "configmaps")
    for index in range(objects):
        labels = {"color": "red" if index % 3 else "blue"}
        body = {"metadata": {"name": f"cm-{index:03d}", "labels": labels}, "data": {"n": "0"}}
        cluster.create(rtype, NAMESPACES[index % 2], body)
    return cluster


def state(items: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(namespace, name) -> resourceVersion of the listed objects."""
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in items}


def write_something(cluster: Cluster, rng: random.Random) -> None:
    """One random write: a create, a label flip (in or out of the selection), a data change, or a delete."""
    rtype = cluster.resource("", "v1", "configmaps")
    namespace = rng.choice(NAMESPACES)
    name = f"cm-{rng.randrange(40):03d}"
    current = cluster.peek(rtype.storage_key, namespace, name)
    choice = rng.random()
    if current is None:
        body = {"metadata": {"name": name, "labels": {"color": rng.choice(["red", "blue"])}}}
        cluster.create(rtype, namespace, body)
    elif choice < 0.4:
        flipped = "blue" if current["metadata"]["labels"]["color"] == "red" else "red"
        cluster.patch(rtype, namespace, name, {"metadata": {"labels": {"color": flipped}}}, MERGE)
    elif choice < 0.7:
        cluster.patch(rtype, namespace, name, {"data": {"n": str(rng.random())}}, MERGE)
    else:
        cluster.delete(rtype, namespace, name)


@settings(max_examples=40, deadline=None)
@given(
    hot=st.sampled_from([1, 10_000]),
    indexed_size=st.sampled_from([5, 1_000]),  # labels indexed as the resource grows, or by the first selected list
    namespace=st.sampled_from([None, "beta"]),
    selector=st.sampled_from(["", "color=red", "color!=red"]),
    seed=st.integers(0, 2**16),
    limit=st.integers(1, 12),
    writes=st.integers(0, 6),
)
def test_a_walk_returns_each_object_once_as_at_its_snapshot(
    hot: int, indexed_size: int, namespace: str | None, selector: str, seed: int, limit: int, writes: int
) -> None:
    with mock.patch.object(buckets, "INDEXED_SIZE", indexed_size):
        cluster = populated(hot=hot, seed=seed)
    rtype = cluster.resource("", "v1", "configmaps")
    labels = LabelSelector.parse(selector)
    expected = state(cluster.list(rtype, namespace, labels=labels)["items"])
    snapshot_rv = cluster.rv
    rng = random.Random(seed)
    walked: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = cluster.list(rtype, namespace, labels=labels, limit=limit, continue_token=token)
        assert page["metadata"]["resourceVersion"] == str(snapshot_rv)
        walked.extend(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            break
        if not selector:  # the count of what follows, at the snapshot (unknown with selectors, as the apiserver's)
            assert page["metadata"]["remainingItemCount"] == len(expected) - len(walked)
        for _ in range(writes):
            write_something(cluster, rng)
    keys = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in walked]
    assert keys == sorted(set(keys))  # each once, in order
    assert state(walked) == expected
    assert all(json.loads(json.dumps(o)) == o for o in walked)


@pytest.mark.parametrize("hot", [1, 10_000], ids=["cold", "hot"])
def test_a_watch_from_now_sends_its_start_then_the_changes_each_once(hot: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "INITIAL_EVENTS_BATCH", 4)  # its start is read in several batches
    cluster = populated(hot=hot)
    rtype = cluster.resource("", "v1", "configmaps")
    labels = LabelSelector.parse("color=red")
    expected = state(cluster.list(rtype, None, labels=labels)["items"])
    subscription = cluster.watch(rtype, None, labels=labels)
    rng = random.Random(7)
    added: list[dict[str, Any]] = []
    later: list[tuple[str, dict[str, Any]]] = []
    for _ in range(200):
        event = subscription.pop()
        if event is None:
            break
        if len(added) < len(expected):
            assert event.type == "ADDED"
            added.append(event.obj)
        else:
            later.append((event.type, event.obj))
        write_something(cluster, rng)  # between batches too: the start is read from its snapshot
    assert state(added) == expected
    rebuilt = dict(expected)
    for kind, obj in later:
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if kind == "DELETED":
            rebuilt.pop(key)
        else:
            assert kind == "MODIFIED" or key not in rebuilt
            rebuilt[key] = obj["metadata"]["resourceVersion"]
    while (event := subscription.pop()) is not None:
        key = (event.obj["metadata"]["namespace"], event.obj["metadata"]["name"])
        if event.type == "DELETED":
            rebuilt.pop(key)
        else:
            rebuilt[key] = event.obj["metadata"]["resourceVersion"]
    assert rebuilt == state(cluster.list(rtype, None, labels=labels)["items"])
    subscription.close()


def test_a_closed_watch_lets_its_snapshot_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "INITIAL_EVENTS_BATCH", 2)
    cluster = populated(hot=10_000)
    rtype = cluster.resource("", "v1", "configmaps")
    subscription = cluster.watch(rtype, None)
    assert subscription.pop() is not None
    assert cluster._snapshots._held
    subscription.close()
    assert not cluster._snapshots._held


def test_a_token_expires_with_the_history_and_comes_with_one_for_the_rest() -> None:
    cluster = populated(hot=1)
    rtype = cluster.resource("", "v1", "configmaps")
    page = cluster.list(rtype, "alpha", limit=5)
    write_something(cluster, random.Random(1))
    cluster.compact()
    with pytest.raises(errors.ApiError) as err:
        cluster.list(rtype, "alpha", limit=5, continue_token=page["metadata"]["continue"])
    assert (err.value.code, err.value.reason) == (410, "Expired")
    rest = cluster.list(rtype, "alpha", continue_token=err.value.to_status()["metadata"]["continue"])
    names = [o["metadata"]["name"] for o in page["items"] + rest["items"]]
    assert names == [o["metadata"]["name"] for o in cluster.list(rtype, "alpha")["items"]]


def test_a_name_selected_list_reads_that_object_only() -> None:
    cluster = populated(hot=1)
    rtype = cluster.resource("", "v1", "configmaps")
    fields = FieldSelector.parse("metadata.name=cm-004", {"metadata.name"})
    stored = cluster.peek(rtype.storage_key, "alpha", "cm-004")
    assert stored is not None
    assert state(cluster.list(rtype, None, fields=fields)["items"]) == {
        ("alpha", "cm-004"): stored["metadata"]["resourceVersion"]
    }
    assert cluster.list(rtype, "beta", fields=fields)["items"] == []


async def test_lists_are_sent_as_the_objects_encode(client: aiohttp.ClientSession) -> None:
    """The served list splices the stored objects' bytes: the same bytes as encoding the list whole."""
    for index in range(5):
        body = {"metadata": {"name": f"cm-{index}", "annotations": {"a": "é"}}, "data": {"x": "\u2603"}}
        async with client.post("/api/v1/namespaces/default/configmaps", json=body) as response:
            assert response.status == 201
    async with client.get("/api/v1/namespaces/default/configmaps", params={"limit": "2"}) as response:
        raw = await response.read()
    listing = json.loads(raw)
    expected = json.dumps(listing, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    assert raw == expected
    assert [o["metadata"]["name"] for o in listing["items"]] == ["cm-0", "cm-1"]
    assert listing["metadata"]["remainingItemCount"] == 3


async def test_a_served_walk_under_writes_is_the_snapshot_and_an_expired_token_goes_on(
    crd_cluster: Cluster, client: aiohttp.ClientSession
) -> None:
    """Over HTTP, as clients walk: each object once at the first page's version; a compacted token is a 410
    whose Status carries a token for the rest of the list at the latest version."""
    url = "/api/v1/namespaces/default/configmaps"
    for index in range(12):
        async with client.post(url, json={"metadata": {"name": f"cm-{index:02d}"}, "data": {"n": "0"}}) as response:
            assert response.status == 201
    async with client.get(url) as response:
        expected = state((await response.json())["items"])
    walked: list[dict[str, Any]] = []
    params = {"limit": "5"}
    versions = set()
    while True:
        async with client.get(url, params=params) as response:
            page = await response.json()
        versions.add(page["metadata"]["resourceVersion"])
        walked.extend(page["items"])
        if "continue" not in page["metadata"]:
            break
        params = {"limit": "5", "continue": page["metadata"]["continue"]}
        # Meanwhile: an object ahead of the walk changes, one behind it goes, a new one comes ahead of it.
        patch = {"data": {"n": "1"}}
        headers = {"Content-Type": MERGE}
        async with client.patch(f"{url}/cm-11", json=patch, headers=headers) as response:
            assert response.status == 200
        async with client.delete(f"{url}/{walked[-1]['metadata']['name']}") as response:
            assert response.status == 200
        async with client.post(url, json={"metadata": {"name": f"cm-99-{len(walked)}"}}) as response:
            assert response.status == 201
    assert len(versions) == 1
    assert [o["metadata"]["name"] for o in walked] == sorted(name for _, name in expected)
    assert state(walked) == expected
    first = await (await client.get(url, params={"limit": "5"})).json()
    async with client.post(url, json={"metadata": {"name": "cm-after"}}) as response:
        assert response.status == 201
    crd_cluster.compact()  # the first page's version is gone from the history
    async with client.get(url, params={"limit": "5", "continue": first["metadata"]["continue"]}) as response:
        assert response.status == 410
        status = await response.json()
    assert (status["reason"], status["code"]) == ("Expired", 410)
    async with client.get(url, params={"continue": status["metadata"]["continue"]}) as response:
        rest = await response.json()
    async with client.get(url) as response:
        now = await response.json()
    assert [o["metadata"]["name"] for o in first["items"] + rest["items"]] == [
        o["metadata"]["name"] for o in now["items"]
    ]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "pop", "read"]), st.sampled_from(["a", "b"]), st.integers(0, 20))))
def test_a_bucket_keeps_its_keys_in_order_as_they_come_and_go(operations: list[tuple[str, str, int]]) -> None:
    """New keys are sorted in when the order is next read: reads, counts and removals see them in order."""
    bucket = buckets.Bucket()
    hot = HotObjects()
    model: set[tuple[str, str]] = set()
    for operation, namespace, number in operations:
        key = (namespace, f"o-{number:02d}")
        if operation == "put":
            bucket.put(key, Stored({"metadata": {"name": key[1]}}, hot), bucket.get(key))
            model.add(key)
        elif operation == "pop" and key in model:
            bucket.pop(key)
            model.discard(key)
        else:
            assert list(bucket.keys()) == sorted(model)
            assert list(bucket.keys("b", after=key)) == sorted(k for k in model if k[0] == "b" and k > key)
            assert bucket.count("a") == len([k for k in model if k[0] == "a"])
    bucket.sort_in()
    assert [key for key, _ in bucket.items()] == sorted(model) and len(bucket) == len(model)
