"""Table pages made from stored bytes are the tables made from the decoded objects, byte for byte."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from kopf_sim.kube import tables
from kopf_sim.kube.objects import compact_json
from kopf_sim.kube.resources import ResourceType
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from tests.helpers import widget

NOW = datetime.datetime(2030, 1, 1, 12, 0, tzinfo=datetime.UTC)


def configmaps() -> list[dict[str, Any]]:
    metadata_first = {
        "metadata": {"name": "a", "namespace": "default", "labels": {"app": "ünïcode"}, "creationTimestamp": "x"},
        "data": {"k": "v"},
    }
    metadata_last = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {"payload": '"metadata":{"name":"fake"}', "nested": "{}"},
        "metadata": {"name": "b", "namespace": "default", "creationTimestamp": "2029-12-31T12:00:00Z"},
    }
    untimed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    return [metadata_first, metadata_last, untimed]


def encoded(objects: list[dict[str, Any]]) -> list[bytes]:
    return [compact_json(obj).encode() for obj in objects]


LISTING = {"resourceVersion": "7", "continue": "token"}


def as_table(rtype: ResourceType, objects: list[dict[str, Any]], include: str, listing: Any = LISTING) -> bytes:
    return compact_json(tables.table(rtype, objects, NOW, list_meta=listing, include=include)).encode()


@pytest.mark.parametrize("include", ["Metadata", "None", "Object"])
def test_rows_spliced_from_stored_bytes_are_the_rows_of_decoded_objects(include: str) -> None:
    rtype = Cluster().resource("", "v1", "configmaps")  # its columns read the metadata only: spliced
    objects = configmaps()
    made = tables.table_json(rtype, encoded(objects), NOW, list_meta=LISTING, include=include)
    assert made == as_table(rtype, objects, include)
    assert [row["cells"] for row in json.loads(made)["rows"]] == [["a", "x"], ["b", "24h"], ["c", "<none>"]]


def test_rows_of_kinds_with_other_columns_are_made_of_the_decoded_objects() -> None:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(1))
    deployments = cluster.resource("apps", "v1", "deployments")  # READY, UP-TO-DATE, ...: not the metadata only
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    stored = [cluster.create(deployments, "default", body)]
    made = tables.table_json(deployments, encoded(stored), NOW, list_meta=LISTING)
    assert made == as_table(deployments, stored, "Metadata")


def test_a_served_page_of_a_table_is_spliced_as_its_decoded_table(crd_cluster: Cluster) -> None:
    rtype = crd_cluster.resource("acme.example", "v1", "widgets")
    for index in range(5):
        crd_cluster.create(rtype, "default", widget(f"w{index}", size=index))
    listing = crd_cluster.read_list(rtype, "default", limit=3)
    made = tables.table_json(rtype, listing.raws(), NOW, list_meta=listing.metadata)
    assert made == as_table(rtype, listing.objects(), "Metadata", listing.metadata)
