from kopf._cogs.clients import fetching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

from .conftest import CONFIGMAPS, WIDGETS, Recorder


def fill(cluster: Cluster, count: int) -> None:
    rtype = cluster.resource("acme.example", "v1", "widgets")
    for idx in range(count):
        labels = {"parity": "even" if idx % 2 == 0 else "odd"}
        body = widget(f"w{idx:04d}", size=idx)
        body["metadata"]["labels"] = labels
        cluster.create(rtype, "default", body)


async def test_listing_in_chunks(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    fill(cluster, 1200)
    items, rv = await fetching.list_objs(resource=WIDGETS, namespace="default", settings=settings, vault=vault)
    assert len(items) == 1200
    assert len({item["metadata"]["uid"] for item in items}) == 1200
    assert all(item["apiVersion"] == "acme.example/v1" and item["kind"] == "Widget" for item in items)
    assert list(items[0])[:2] == ["apiVersion", "kind"]
    assert rv == str(cluster.rv)
    queries = [query for method, path, query in recorder.requests if path.endswith("/widgets")]
    assert len(queries) == 3
    assert all("limit=500" in query for query in queries)
    assert "continue=" not in queries[0] and all("continue=" in query for query in queries[1:])


async def test_listing_with_small_chunks(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    fill(cluster, 30)
    rv_before = str(cluster.rv)
    listing = fetching.list_objs(resource=WIDGETS, namespace="default", settings=settings, vault=vault, chunk_size=10)
    items, rv = await listing
    assert len(items) == 30 and rv == rv_before


async def test_listing_with_label_selectors(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    fill(cluster, 10)
    items, _ = await fetching.list_objs(
        resource=WIDGETS, namespace="default", settings=settings, vault=vault, label_selector={"parity": "even"}
    )
    assert [item["metadata"]["name"] for item in items] == ["w0000", "w0002", "w0004", "w0006", "w0008"]
    items, _ = await fetching.list_objs(
        resource=WIDGETS, namespace="default", settings=settings, vault=vault, label_selector={"parity": False}
    )
    assert items == []


async def test_listing_cluster_wide_and_empty(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    items, rv = await fetching.list_objs(resource=CONFIGMAPS, namespace="nonexistent", settings=settings, vault=vault)
    assert items == [] and rv


async def test_read_obj(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    fill(cluster, 1)
    body = await fetching.read_obj(resource=WIDGETS, namespace="default", name="w0000", settings=settings, vault=vault)
    assert body is not None and body["spec"] == {"size": 0}
    body = await fetching.read_obj(resource=WIDGETS, namespace="default", name="zzz", settings=settings, vault=vault)
    assert body is None


def test_label_selectors() -> None:
    assert fetching.build_label_selector(None) is None
    assert fetching.build_label_selector("") is None
    assert fetching.build_label_selector("a=b") == "a=b"
    assert fetching.build_label_selector({"a": "b", "c": True, "d": False, "e": ["y", "x"]}) == "a=b,c,!d,e in (x,y)"
