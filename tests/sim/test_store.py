"""The store's write semantics: versions, generations, concurrency, subresources, dry runs, CRDs."""

from __future__ import annotations

import json
import random
import re
import uuid
from typing import Any

import pytest

from kopf_sim.kube import errors, objects
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids, random_uids
from kopf_sim.writes import preparing
from tests.helpers import widget

MERGE = "application/merge-patch+json"


def widgets(cluster: Cluster):  # type: ignore[no-untyped-def]
    return cluster.resource("acme.example", "v1", "widgets")


def configmaps(cluster: Cluster):  # type: ignore[no-untyped-def]
    return cluster.resource("", "v1", "configmaps")


def test_initial_namespaces(cluster: Cluster) -> None:
    names = [o["metadata"]["name"] for o in cluster.list(cluster.resource("", "v1", "namespaces"), None)["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_create_fills_system_fields(crd_cluster: Cluster, clock: ManualClock) -> None:
    clock.advance(5)
    obj = crd_cluster.create(widgets(crd_cluster), "default", widget("w1", size=1))
    meta = obj["metadata"]
    assert meta["generation"] == 1
    assert meta["creationTimestamp"] == "2026-01-01T00:00:05Z"
    assert len(meta["uid"]) == 36
    assert int(meta["resourceVersion"]) == crd_cluster.rv
    assert obj["spec"] == {"size": 1, "color": "blue"}  # defaulted by the schema


def test_resource_versions_increase_cluster_wide(crd_cluster: Cluster) -> None:
    a = crd_cluster.create(widgets(crd_cluster), "default", widget("a"))
    b = crd_cluster.create(configmaps(crd_cluster), "default", {"metadata": {"name": "b"}})
    assert int(b["metadata"]["resourceVersion"]) == int(a["metadata"]["resourceVersion"]) + 1


def test_duplicate_create_is_already_exists(crd_cluster: Cluster) -> None:
    crd_cluster.create(widgets(crd_cluster), "default", widget("w1"))
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.create(widgets(crd_cluster), "default", widget("w1"))
    assert (err.value.code, err.value.reason) == (409, "AlreadyExists")
    assert err.value.message == 'widgets.acme.example "w1" already exists'


def test_get_missing_is_not_found(crd_cluster: Cluster) -> None:
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.get(widgets(crd_cluster), "default", "x")
    assert err.value.to_status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'widgets.acme.example "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "group": "acme.example", "kind": "widgets"},
        "code": 404,
    }


def test_stale_update_is_a_conflict(crd_cluster: Cluster) -> None:
    old = crd_cluster.create(widgets(crd_cluster), "default", widget("w1", size=1))
    crd_cluster.patch(widgets(crd_cluster), "default", "w1", {"spec": {"size": 2}}, MERGE)
    stale = dict(old, spec={"size": 3})
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.update(widgets(crd_cluster), "default", "w1", stale)
    assert err.value.code == 409
    assert err.value.message == (
        'Operation cannot be fulfilled on widgets.acme.example "w1": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )


def test_custom_resources_need_a_resource_version_on_update(crd_cluster: Cluster) -> None:
    crd_cluster.create(widgets(crd_cluster), "default", widget("w1"))
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.update(widgets(crd_cluster), "default", "w1", widget("w1", size=5))
    assert err.value.code == 422
    assert "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update" in err.value.message


def test_builtins_allow_unconditional_updates(crd_cluster: Cluster) -> None:
    crd_cluster.create(configmaps(crd_cluster), "default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    obj = crd_cluster.update(configmaps(crd_cluster), "default", "c", {"metadata": {"name": "c"}, "data": {"a": "2"}})
    assert obj["data"] == {"a": "2"}


def test_generation_bumps_only_on_spec_changes(crd_cluster: Cluster) -> None:
    rtype = widgets(crd_cluster)
    crd_cluster.create(rtype, "default", widget("w1", size=1))
    assert (
        crd_cluster.patch(rtype, "default", "w1", {"metadata": {"labels": {"a": "b"}}}, MERGE)["metadata"]["generation"]
        == 1
    )
    assert (
        crd_cluster.patch(rtype, "default", "w1", {"status": {"x": 1}}, MERGE, subresource="status")["metadata"][
            "generation"
        ]
        == 1
    )
    assert crd_cluster.patch(rtype, "default", "w1", {"spec": {"size": 2}}, MERGE)["metadata"]["generation"] == 2


def test_noop_writes_do_not_change_the_version(crd_cluster: Cluster) -> None:
    rtype = widgets(crd_cluster)
    obj = crd_cluster.create(rtype, "default", widget("w1", size=1))
    same = crd_cluster.patch(rtype, "default", "w1", {"spec": {"size": 1}}, MERGE)
    assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def test_status_subresource_separation(crd_cluster: Cluster) -> None:
    rtype = widgets(crd_cluster)
    created = crd_cluster.create(rtype, "default", {**widget("w1", size=1), "status": {"ignored": True}})
    assert "status" not in created
    main = crd_cluster.patch(rtype, "default", "w1", {"spec": {"size": 2}, "status": {"x": 1}}, MERGE)
    assert "status" not in main and main["spec"]["size"] == 2
    status = crd_cluster.patch(
        rtype, "default", "w1", {"spec": {"size": 9}, "status": {"x": 1}}, MERGE, subresource="status"
    )
    assert status["status"] == {"x": 1} and status["spec"]["size"] == 2


def test_generate_name_is_deterministic() -> None:
    body = {"metadata": {"generateName": "cm-"}}
    names = []
    for _ in range(2):
        fresh = Cluster(clock=ManualClock(), uids=SeededUids(3))
        names.append(fresh.create(configmaps(fresh), "default", body)["metadata"]["name"])
    assert names[0].startswith("cm-") and len(names[0]) == 8
    assert names[0] == names[1]


def test_dry_run_changes_nothing(crd_cluster: Cluster) -> None:
    rv = crd_cluster.rv
    obj = crd_cluster.create(widgets(crd_cluster), "default", widget("w1"), dry_run=True)
    assert obj["metadata"]["name"] == "w1"
    assert crd_cluster.rv == rv and crd_cluster.count(("acme.example", "widgets")) == 0


def test_list_with_selectors_and_chunks(crd_cluster: Cluster) -> None:
    rtype = configmaps(crd_cluster)
    for index in range(7):
        crd_cluster.create(rtype, "default", {"metadata": {"name": f"c{index}", "labels": {"odd": str(index % 2)}}})
    page = crd_cluster.list(rtype, "default", limit=3)
    assert [o["metadata"]["name"] for o in page["items"]] == ["c0", "c1", "c2"]
    assert page["metadata"]["remainingItemCount"] == 4
    names = []
    token = page["metadata"].get("continue")
    while token:
        page = crd_cluster.list(rtype, "default", limit=3, continue_token=token)
        names += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["c3", "c4", "c5", "c6"]
    odd = crd_cluster.list(rtype, "default", labels=LabelSelector.parse("odd=1"))
    assert [o["metadata"]["name"] for o in odd["items"]] == ["c1", "c3", "c5"]
    named = crd_cluster.list(rtype, None, fields=FieldSelector.parse("metadata.name=c4", {"metadata.name"}))
    assert [o["metadata"]["name"] for o in named["items"]] == ["c4"]


def test_expired_continue_token(crd_cluster: Cluster) -> None:
    rtype = configmaps(crd_cluster)
    for index in range(3):
        crd_cluster.create(rtype, "default", {"metadata": {"name": f"c{index}"}})
    token = crd_cluster.list(rtype, "default", limit=1)["metadata"]["continue"]
    crd_cluster.create(rtype, "default", {"metadata": {"name": "later"}})
    crd_cluster.compact()
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.list(rtype, "default", limit=1, continue_token=token)
    assert (err.value.code, err.value.reason) == (410, "Expired")


def test_an_expired_continue_token_comes_with_one_for_the_inconsistent_rest(crd_cluster: Cluster) -> None:
    rtype = configmaps(crd_cluster)
    for name in ("a", "b", "c"):
        crd_cluster.create(rtype, "default", {"metadata": {"name": name}})
    token = crd_cluster.list(rtype, "default", limit=1)["metadata"]["continue"]
    crd_cluster.create(rtype, "default", {"metadata": {"name": "later"}})
    crd_cluster.create(rtype, "default", {"metadata": {"name": "0"}})  # before the start key: not listed
    crd_cluster.compact()
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.list(rtype, "default", limit=1, continue_token=token)
    status = err.value.to_status()
    assert status["message"].startswith("The provided continue parameter is too old")
    fresh = status["metadata"]["continue"]
    assert fresh and fresh != token
    names = []
    page = crd_cluster.list(rtype, "default", limit=2, continue_token=fresh)
    assert page["metadata"]["resourceVersion"] == str(crd_cluster.rv)  # the rest is read at the latest version
    while True:
        names += [o["metadata"]["name"] for o in page["items"]]
        if not page["metadata"].get("continue"):
            break
        page = crd_cluster.list(rtype, "default", limit=2, continue_token=page["metadata"]["continue"])
    assert names == ["b", "c", "later"]


def test_crd_becomes_served_and_established(crd_cluster: Cluster) -> None:
    crd = crd_cluster.get(
        crd_cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, "widgets.acme.example"
    )
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["listKind"] == "WidgetList"
    assert crd_cluster.catalogue.lookup("acme.example", "v1", "widgets") is not None


def test_invalid_crd_is_rejected(cluster: Cluster) -> None:
    rtype = cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    body = {
        "metadata": {"name": "wrong.name"},
        "spec": {
            "group": "acme.example",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
    }
    with pytest.raises(errors.ApiError) as err:
        cluster.create(rtype, None, body)
    assert err.value.code == 422
    assert 'metadata.name: Invalid value: "wrong.name": must be spec.names.plural+"."+spec.group' in err.value.message


def test_multiple_versions_share_storage(cluster: Cluster) -> None:
    rtype = cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    cluster.create(
        rtype,
        None,
        {
            "metadata": {"name": "things.acme.example"},
            "spec": {
                "group": "acme.example",
                "scope": "Cluster",
                "names": {"plural": "things", "kind": "Thing"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "schema": schema},
                    {"name": "v2beta1", "served": True, "storage": False, "schema": schema},
                ],
            },
        },
    )
    v1 = cluster.resource("acme.example", "v1", "things")
    v2 = cluster.resource("acme.example", "v2beta1", "things")
    cluster.create(v2, None, {"apiVersion": "acme.example/v2beta1", "kind": "Thing", "metadata": {"name": "t"}})
    assert cluster.get(v1, None, "t")["apiVersion"] == "acme.example/v1"
    assert cluster.get(v2, None, "t")["apiVersion"] == "acme.example/v2beta1"
    assert cluster.catalogue.group_versions()["acme.example"] == ["v1", "v2beta1"]


def test_scale_subresource(crd_cluster: Cluster) -> None:
    from kopf_sim.writes import scales

    rtype = widgets(crd_cluster)
    obj = crd_cluster.create(rtype, "default", widget("w1", replicas=2))
    assert scales.scale_of(rtype, obj)["spec"] == {"replicas": 2}
    scaled = scales.with_scale(rtype, obj, {"spec": {"replicas": 5}})
    assert crd_cluster.update(rtype, "default", "w1", scaled)["spec"]["replicas"] == 5


def test_server_side_apply_creates_and_conflicts(crd_cluster: Cluster) -> None:
    rtype = configmaps(crd_cluster)
    apply = "application/apply-patch+yaml"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    crd_cluster.patch(rtype, "default", "c", body, apply, manager="one")
    with pytest.raises(errors.ApiError) as err:
        crd_cluster.patch(rtype, "default", "c", {**body, "data": {"a": "2"}}, apply, manager="two")
    assert err.value.code == 409
    assert 'conflict with "one"' in err.value.message
    forced = crd_cluster.patch(rtype, "default", "c", {**body, "data": {"a": "2"}}, apply, manager="two", force=True)
    assert forced["data"] == {"a": "2"}
    managers = {entry["manager"] for entry in forced["metadata"]["managedFields"]}
    assert managers == {"two"}


def test_services_get_cluster_ips(cluster: Cluster) -> None:
    rtype = cluster.resource("", "v1", "services")
    svc = cluster.create(rtype, "default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    assert svc["spec"]["clusterIP"].startswith("10.96.")
    assert svc["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]


def service_of(seed: int, body: dict[str, object]) -> dict[str, object]:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(seed))
    return cluster.create(cluster.resource("", "v1", "services"), "default", body)


def test_addresses_and_node_ports_are_allocated_at_random_by_the_seed() -> None:
    body = {
        "metadata": {"name": "s"},
        "spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]},
    }
    first, again, other = service_of(0, body), service_of(0, body), service_of(1, body)
    assert first == again
    ports = [port["nodePort"] for port in first["spec"]["ports"]]
    assert all(30000 <= port <= 32767 for port in ports) and len(set(ports)) == 2
    assert first["spec"]["clusterIP"] != other["spec"]["clusterIP"]
    assert ports != [port["nodePort"] for port in other["spec"]["ports"]]


def test_addresses_and_node_ports_are_unique_and_released_on_deletion(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small range fills up with distinct addresses and ports; a deleted service's are handed out again."""
    monkeypatch.setattr(preparing, "_SERVICE_ADDRESSES", 6)
    monkeypatch.setattr(preparing, "NODE_PORTS", range(30000, 30006))
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(3))
    rtype = cluster.resource("", "v1", "services")

    def create(name: str) -> dict[str, Any]:
        body = {"metadata": {"name": name}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
        return cluster.create(rtype, "default", body)

    services = [create(f"s{index}") for index in range(6)]
    addresses = {svc["spec"]["clusterIP"] for svc in services}
    ports = {svc["spec"]["ports"][0]["nodePort"] for svc in services}
    assert len(addresses) == len(ports) == 6
    with pytest.raises(errors.ApiError, match="failed to allocate a serviceIP: range is full"):
        create("full")
    cluster.delete(rtype, "default", "s2")
    again = create("again")
    assert again["spec"]["clusterIP"] == services[2]["spec"]["clusterIP"]
    assert again["spec"]["ports"][0]["nodePort"] == services[2]["spec"]["ports"][0]["nodePort"]
    given = {"metadata": {"name": "given"}, "spec": {"clusterIP": "10.96.9.9", "ports": [{"port": 80}]}}
    cluster.create(rtype, "default", given)  # an address given by the user is taken too: never handed out twice
    assert cluster.cluster_ip_taken("10.96.9.9")
    cluster.delete(rtype, "default", "given")
    assert not cluster.cluster_ip_taken("10.96.9.9")


def test_a_services_node_ports_are_kept_by_an_update_that_leaves_them_out(cluster: Cluster) -> None:
    rtype = cluster.resource("", "v1", "services")
    ports = [{"name": "http", "port": 80}]
    svc = cluster.create(rtype, "default", {"metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": ports}})
    allocated = svc["spec"]["ports"][0]["nodePort"]
    updated = cluster.update(rtype, "default", "s", {**svc, "spec": {**svc["spec"], "ports": ports}})
    assert updated["spec"]["ports"][0]["nodePort"] == allocated
    cluster_ip = cluster.create(rtype, "default", {"metadata": {"name": "c"}, "spec": {"ports": ports}})
    assert "nodePort" not in cluster_ip["spec"]["ports"][0]  # a ClusterIP service has none


def test_empty_metadata_collections_are_omitted(cluster: Cluster) -> None:
    body = {"metadata": {"name": "c", "labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": []}}
    obj = cluster.create(configmaps(cluster), "default", body)
    assert set(obj["metadata"]) == {"name", "namespace", "uid", "creationTimestamp", "resourceVersion"}


def test_generated_names_that_are_taken_are_generated_again() -> None:
    seeded = SeededUids(3)
    script: list[str] = []
    cluster = Cluster(clock=ManualClock(), uids=lambda: script.pop(0) if script else seeded())
    cms = cluster.resource("", "v1", "configmaps")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-"}}
    same, other = "00000000-0000-0000-0000-000000000007", "00000000-0000-0000-0000-000000000008"
    script[:] = [same, "uid-1"]  # the name's source, then the object's uid
    first = cluster.create(cms, "default", body)
    script[:] = [same, other, "uid-2"]  # the same name at first, then another one
    second = cluster.create(cms, "default", body)
    assert first["metadata"]["name"] != second["metadata"]["name"]
    assert first["metadata"]["name"].startswith("cm-") and second["metadata"]["name"].startswith("cm-")
    assert not script
    script[:] = [same] * 8 + ["uid-3"]  # every attempt is taken: a conflict, as in the apiserver
    with pytest.raises(errors.ApiError) as info:
        cluster.create(cms, "default", body)
    assert info.value.code == 409 and info.value.reason == "AlreadyExists"


def test_an_object_too_large_to_store_is_refused_by_every_write(cluster: Cluster) -> None:
    """etcd's limit is checked on the bytes that the store keeps (creates, updates, dry runs); nothing is stored."""
    rtype = configmaps(cluster)
    large = "x" * 1_572_800  # with the rest of the object, just over the limit
    body = {"metadata": {"name": "big"}, "data": {"k": large}}
    for dry_run in (True, False):
        with pytest.raises(errors.ApiError) as exc:
            cluster.create(rtype, "default", body, dry_run=dry_run)
        assert exc.value.code == 413 and exc.value.message == "etcdserver: request is too large"
    rv = cluster.rv
    cluster.create(rtype, "default", {"metadata": {"name": "big"}, "data": {"k": large[:-500]}})
    assert cluster.rv == rv + 1
    for dry_run in (True, False):
        with pytest.raises(errors.ApiError) as exc:
            cluster.patch(rtype, "default", "big", {"data": {"k": large}}, MERGE, dry_run=dry_run)
        assert exc.value.code == 413
    assert cluster.rv == rv + 1 and cluster.get(rtype, "default", "big")["data"]["k"] == large[:-500]
    stored = cluster.stored(rtype.storage_key, "default", "big")
    assert stored is not None and json.loads(stored.raw) == cluster.get(rtype, "default", "big")


def test_random_uids_are_version_4_uuids_as_text() -> None:
    """The served simulator's uids (made a few hundred at a time) are what ``str(uuid.uuid4())`` gives."""
    uids = [random_uids() for _ in range(600)]
    assert len(set(uids)) == 600
    for uid in uids:
        parsed = uuid.UUID(uid)
        assert str(parsed) == uid and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_names_are_judged_as_the_apiservers_expressions_judge_them() -> None:
    """Plain names are found valid without the regular expressions: the same verdicts as with them."""
    label = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
    subdomain = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
    rnd = random.Random(7)
    for _ in range(20_000):
        name = "".join(rnd.choice("az09-.A_é \n") for _ in range(rnd.randint(1, 7)))
        assert (not objects.name_problems(name, label=True)) == bool(label.fullmatch(name)), name
        assert (not objects.name_problems(name, label=False)) == bool(subdomain.fullmatch(name)), name
    assert objects.name_problems("a" * 64, label=True) and not objects.name_problems("a" * 64, label=False)
