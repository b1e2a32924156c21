"""The parts of the oracles that see bugs a fault-free run has too: history, reversals, leftovers, correspondences."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kopf._history import TIME, handler_ids, history_masked
from pytest_kopf._observations import HistoryRecords, across_histories, history_records, unseen_records_aside
from pytest_kopf._oracles import (
    Correspondence,
    correspondences,
    final_bodies,
    inconsistencies,
    leftovers,
    patch_and_revert,
    record_creations,
    reports_error,
    reversals,
    unreverted,
)
from pytest_kopf._tracing import record_trace
from pytest_kopf.checks import NoiseField, verify
from pytest_kopf.driving import caught_up, end_state, settle
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.stateful import OperatorSpec, World

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"
DRIVEN = [("checks.example/v1", "Gadget")]


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def test_a_correspondence_is_parsed_from_its_target() -> None:
    parsed = Correspondence.parse("spec.replicas", "deployments/{name}.spec.replicas")
    assert parsed == Correspondence("spec.replicas", "deployments", "{name}", "spec.replicas")
    dotted = Correspondence.parse("spec.size", "configmaps/v1.{name}.data.size")
    assert (dotted.name, dotted.path) == ("v1.{name}", "data.size")  # the path starts at the first dot after }
    assert correspondences({"spec.a": "secrets/x.data.a"}) == (Correspondence("spec.a", "secrets", "x", "data.a"),)
    for bad in ("deployments", "deployments/{name}", "/x.spec", "deployments/{name}."):
        with pytest.raises(ValueError, match=r"<resource>/<name>\.<path>"):
            Correspondence.parse("spec.replicas", bad)


def test_history_is_set_aside_and_the_state_kept() -> None:
    state = [
        {
            "apiVersion": "checks.example/v1",
            "kind": "Gadget",
            "metadata": {"name": "g", "annotations": {"deployment.kubernetes.io/revision": "2"}},
            "status": {"create_fn": {"x": 1}, "update_fn/sub": 1, "error": "bad", "observedGeneration": 2},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "d-1",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "controller": True}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "c",
                "ownerReferences": [{"apiVersion": "checks.example/v1", "kind": "Gadget", "controller": True}],
            },
            "data": {"at": "2026-01-01T00:00:30Z", "size": "3"},
        },
    ]
    masked = history_masked(state, driven=DRIVEN, handlers=["create_fn", "update_fn"])
    assert masked == [
        {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": "g"}, "status": {"error": "bad"}},
        {**state[2], "data": {"at": TIME, "size": "3"}},
    ]


def test_when_a_cronjob_has_run_is_set_aside() -> None:
    # outsider8's cron_ok (a CronJob per object) failed 'transition': the object reached its spec after a minute had
    # passed, so its CronJob had run once, while the one created directly in that state had not run yet.
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c"},
        "spec": {"schedule": "* * * * *"},
    }
    ran = {**cronjob, "status": {"lastScheduleTime": "2026-01-01T00:01:00Z", "active": [{"name": "c-1"}]}}
    assert history_masked([ran], driven=DRIVEN, handlers=[]) == history_masked([cronjob], driven=DRIVEN, handlers=[])
    assert history_masked([cronjob], driven=DRIVEN, handlers=[]) == [cronjob]


def test_the_labels_that_children_copied_from_their_owner_are_set_aside() -> None:
    # kopf.adopt labels a child with its owner's labels as they are at the child's write: an operator that reacts
    # to its objects' spec only has children with the labels of the last spec change (or of none), a snapshot.
    owner = {**gadget("g"), "metadata": {"name": "g", "namespace": "ns", "labels": {"app": "a", "tier": "b"}}}

    def child(**labels: str) -> dict[str, Any]:
        refs = [{"apiVersion": "checks.example/v1", "kind": "Gadget", "name": "g", "controller": True}]
        metadata = {"name": "c", "namespace": "ns", "labels": labels, "ownerReferences": refs}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}

    copied = history_masked([owner, child(app="a", tier="b", own="x")], driven=DRIVEN, handlers=[])
    stale = history_masked([owner, child(app="z", own="x")], driven=DRIVEN, handlers=[])  # copied before a change
    assert copied == stale and copied[1]["metadata"]["labels"] == {"own": "x"}  # the operator's own label is kept
    # A label the owner has had (the run's trace tells it), copied before it was removed from the owner:
    removed = [owner, child(gone="y", own="x")]
    assert history_masked(removed, driven=DRIVEN, handlers=[])[1]["metadata"]["labels"] == {"gone": "y", "own": "x"}
    assert history_masked(removed, driven=DRIVEN, handlers=[], label_keys=["gone"]) == copied


def test_the_records_of_a_history_are_set_aside_across_histories() -> None:
    # A probing Job per Pod (owned by the Pod, derived from a ReplicaSet): made when that pod was ready, as the
    # spec was then; the driven object's status.lastProbe written by the pods' handler: what it saw happen.
    def obj(kind: str, name: str, owner: tuple[str, str] | None = None, **fields: Any) -> dict[str, Any]:
        refs = [{"kind": owner[0], "name": owner[1], "controller": True, "apiVersion": "apps/v1"}] if owner else []
        meta = {"name": name, "namespace": "ns", **({"ownerReferences": refs} if refs else {})}
        return {"apiVersion": fields.pop("apiVersion", "v1"), "kind": kind, "metadata": meta, **fields}

    state = [
        {**gadget("g"), "status": {"lastProbe": "Succeeded", "phase": "Ready"}},
        obj("Pod", "web-1", ("ReplicaSet", "web")),
        obj("Job", "probe-web-1", ("Pod", "web-1"), apiVersion="batch/v1"),
        obj("Pod", "probe-web-1-x", ("Job", "probe-web-1")),
        obj("ConfigMap", "c", ("Gadget", "g")),
    ]
    kept = across_histories(state, driven=DRIVEN, records=HistoryRecords(status_keys=frozenset({"lastProbe"})))
    assert [(o["kind"], o["metadata"]["name"]) for o in kept] == [("Gadget", "g"), ("Pod", "web-1"), ("ConfigMap", "c")]
    assert kept[0]["status"] == {"phase": "Ready"}
    assert state[0]["status"]["lastProbe"] == "Succeeded"  # not changed in place


OBSERVING = """
import kopf
import kubernetes

@kopf.on.startup()
def configure(**_):
    kubernetes.config.load_kube_config()

@kopf.on.create("gadgets")
def create_fn(patch, **_):
    patch.status["phase"] = "Ready"

@kopf.on.event("configmaps")
def seen(name, **_):  # in a thread, with the official client: its requests are told as this handler's too
    if name == "probe":
        body = {"status": {"lastSeen": name, "phase": "Ready"}}
        api = kubernetes.client.CustomObjectsApi()
        api.patch_namespaced_custom_object_status("checks.example", "v1", "default", "gadgets", "g", body)
"""


async def test_the_status_fields_only_other_resources_handlers_write_are_observations(
    kopf_cluster: Any, kopf_operator: Any, tmp_path: Path
) -> None:
    path = tmp_path / "operator.py"
    path.write_text(OBSERVING)
    await kopf_cluster.apply(CRD)
    trace = record_trace(kopf_cluster)
    await kopf_operator.start(paths=[path])
    await kopf_cluster.create({**gadget("g"), "metadata": {"name": "g", "namespace": "default"}})
    await settle(kopf_cluster, kopf_operator)
    await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}})
    await kopf_cluster.patch(RESOURCE, "g", {"metadata": {"labels": {"tier": "a"}}})
    await kopf_cluster.patch(RESOURCE, "g", {"metadata": {"labels": {"tier": None}}})
    await settle(kopf_cluster, kopf_operator)
    resources = [await kopf_cluster.resolve(RESOURCE)]
    assert (await kopf_cluster.get(RESOURCE, "g"))["status"]["lastSeen"] == "probe"
    # phase: written by the gadgets' own handler too (the object's state); lastSeen: by the config maps' only.
    records = history_records(trace.entries, kopf_operator, resources)
    assert records.status_keys == {"lastSeen"}
    assert records.label_keys == {"tier"}  # had, though removed since


def test_what_the_controllers_derive_with_no_owner_is_not_compared() -> None:
    def service(name: str, selector: dict[str, str] | None) -> dict[str, Any]:
        spec = {"ports": [{"port": 80}], **({"selector": selector} if selector else {})}
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "ns"}, "spec": spec}

    def endpoints(name: str, ip: str) -> dict[str, Any]:
        meta = {"name": name, "namespace": "ns"}
        return {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta, "subsets": [{"addresses": [{"ip": ip}]}]}

    def obj(kind: str, name: str, namespace: str | None = "ns", **fields: Any) -> dict[str, Any]:
        meta = {"name": name, **({"namespace": namespace} if namespace else {}), **fields.pop("metadata", {})}
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, **fields}

    claims = {"volumeClaimTemplates": [{"metadata": {"name": "data"}}]}
    provisioned = {"annotations": {"pv.kubernetes.io/provisioned-by": "kopf.dev/sim-hostpath"}}
    # The pods behind a selector come and go (new IPs, uids); the Endpoints of a selector-less Service are written
    # by whoever made the Service: those are compared. A StatefulSet keeps its claims when it scales down (history).
    state = [
        service("web", {"app": "web"}),
        endpoints("web", "10.0.0.1"),
        service("db", None),
        endpoints("db", "1.2.3.4"),
        {**obj("StatefulSet", "ts", spec=claims), "apiVersion": "apps/v1"},
        obj("PersistentVolumeClaim", "data-ts-2"),
        obj("PersistentVolumeClaim", "data-other-0"),
        obj("PersistentVolume", "pvc-1234", None, metadata=provisioned),
        obj("PersistentVolume", "made-by-hand", None),
    ]
    masked = history_masked(state, driven=DRIVEN, handlers=[])
    assert [(obj["kind"], obj["metadata"]["name"]) for obj in masked] == [
        ("Service", "web"),
        ("Service", "db"),
        ("Endpoints", "db"),
        ("StatefulSet", "ts"),
        ("PersistentVolumeClaim", "data-other-0"),
        ("PersistentVolume", "made-by-hand"),
    ]


def test_final_bodies_are_the_objects_as_a_user_creates_them() -> None:
    obj = {
        **gadget("g", size=3),
        "data": {"a": "b"},
        "status": {"x": 1},
        "metadata": {
            "name": "g",
            "namespace": "default",
            "uid": "u",
            "resourceVersion": "7",
            "labels": {"app": "a"},
            "annotations": {"kopf.zalando.org/last-handled-configuration": "{}", "note": "n"},
            "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"],
        },
    }
    deleting = {**gadget("h"), "metadata": {"name": "h", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert final_bodies([obj, deleting]) == [
        {
            "apiVersion": "checks.example/v1",
            "kind": "Gadget",
            "metadata": {"name": "g", "namespace": "default", "labels": {"app": "a"}, "annotations": {"note": "n"}},
            "spec": {"size": 3},
            "data": {"a": "b"},
        }
    ]


async def test_a_reverted_change_that_leaves_an_error_behind_is_told(kopf_cluster: Any, kopf_operator: Any) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[GALLERY / "rollback_bug.py"])
    await kopf_cluster.create(gadget("g", size=3))
    reverted = await patch_and_revert(kopf_cluster, kopf_operator, RESOURCE, "g", {"spec": {"size": 0, "mode": "slow"}})
    assert reverted is not None and reverted["spec"] == {"size": 3}
    assert await patch_and_revert(kopf_cluster, kopf_operator, RESOURCE, "absent", {"spec": {"size": 0}}) is None
    [reversal] = reversals(kopf_cluster)
    found = unreverted([reversal], driven=DRIVEN, handlers=handler_ids(kopf_operator))
    assert found is not None and "+    error: a gadget of size 0 makes no sense" in found
    assert '"size": 0' in found  # the change reverted


async def test_a_reverted_change_that_returns_is_not_told(kopf_cluster: Any, kopf_operator: Any) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[GALLERY / "rollback_ok.py"])
    await kopf_cluster.create(gadget("g", size=3))
    await patch_and_revert(kopf_cluster, kopf_operator, RESOURCE, "g", {"spec": {"size": 0}})
    assert unreverted(reversals(kopf_cluster), driven=DRIVEN, handlers=handler_ids(kopf_operator)) is None


RANDOM_STAMPER = """
import uuid

import kopf


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
def stamp(spec, patch, **_):
    patch.status["size"] = spec.get("size", 0)
    patch.status["token"] = str(uuid.uuid4())  # a new one at each change: noise to the rollback oracle
"""


async def test_a_reverted_change_is_judged_with_the_learned_noise_masked(
    kopf_cluster: Any, kopf_operator: Any, tmp_path: Path
) -> None:
    operator = tmp_path / "stamper.py"
    operator.write_text(RANDOM_STAMPER)
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[operator])
    await kopf_cluster.create(gadget("g", size=3))
    await settle(kopf_cluster, kopf_operator)
    await patch_and_revert(kopf_cluster, kopf_operator, RESOURCE, "g", {"spec": {"size": 5}})
    options: dict[str, Any] = dict(checks=["rollback"], resources=[RESOURCE])
    with pytest.raises(OperatorCheckFailed, match="token"):  # unmasked, a new token is a difference
        await verify(kopf_cluster, kopf_operator, **options)
    noise = [NoiseField("checks.example/v1", "Gadget", "default", "g", ("status", "token"))]
    await verify(kopf_cluster, kopf_operator, noise=noise, **options)  # the token is noise: no failure


async def test_the_operators_creations_are_told_from_the_tests_and_the_clusters(
    kopf_cluster: Any, kopf_operator: Any
) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[GALLERY / "cleanup_bug.py"])
    created = record_creations(kopf_cluster)
    await kopf_cluster.create(gadget("g", size=3))  # the test's own
    await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine"}})
    await kopf_cluster.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        }
    )  # its ReplicaSet & Pod: the cluster's own
    await settle(kopf_cluster, kopf_operator)
    assert len(created) == 1  # the child ConfigMap only
    assert leftovers(kopf_cluster, created) == ["configmaps default/g-data"]  # its owner is alive, but it is not owned
    assert leftovers(kopf_cluster, created, retained=["configmaps/*-data"]) == []
    assert leftovers(kopf_cluster, created, retained=["default/configmap/g-*"]) == []
    await kopf_cluster.delete(RESOURCE, "g")
    await settle(kopf_cluster, kopf_operator)
    assert leftovers(kopf_cluster, created) == ["configmaps default/g-data"]


async def test_owned_creations_are_not_leftovers_while_their_owner_lives(kopf_cluster: Any, kopf_operator: Any) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[GALLERY / "cleanup_ok.py"])
    created = record_creations(kopf_cluster)
    await kopf_cluster.create(gadget("g", size=3))
    await settle(kopf_cluster, kopf_operator)
    assert len(created) == 1 and leftovers(kopf_cluster, created) == []
    await kopf_cluster.delete(RESOURCE, "g")
    await settle(kopf_cluster, kopf_operator)
    assert leftovers(kopf_cluster, created) == []
    assert [obj["metadata"]["name"] for obj in end_state(kopf_cluster) if obj["kind"] == "ConfigMap"] == []


async def test_inconsistencies_are_named_with_both_values(kopf_cluster: Any, kopf_operator: Any) -> None:
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[GALLERY / "consistency_bug.py"])
    for name, size in (("zero", 0), ("two", 2)):
        await kopf_cluster.create(gadget(name, size=size))
    await kopf_cluster.create(gadget("none"))
    await settle(kopf_cluster, kopf_operator)
    driven = await kopf_cluster.list(RESOURCE)
    declared = correspondences(
        {"spec.size": "configmaps/{name}-data.data.size", "spec.mode": "configmaps/{name}-data.data.mode"}
    )
    assert await inconsistencies(kopf_cluster, driven, declared) == [
        "gadget zero: spec.size=0, but configmaps/zero-data has data.size='3'"
    ]
    elsewhere = correspondences({"spec.size": "secrets/{name}.data.size"})
    assert await inconsistencies(kopf_cluster, driven, elsewhere) == [
        "gadget two: spec.size=2, but secrets/two does not exist",
        "gadget zero: spec.size=0, but secrets/zero does not exist",
    ]


@pytest.mark.parametrize(
    "status",
    [
        {"error": "replicas must be positive"},
        {"errorMessage": "bad image", "replicas": 2},
        {"phase": "Failed"},
        {"state": "invalid"},
        {"conditions": [{"type": "Degraded", "status": "True"}]},
        {"conditions": [{"type": "Ready", "status": "False", "reason": "InvalidSpec"}]},
    ],
)
def test_a_status_that_reports_an_error_is_a_refusal(status: dict[str, Any]) -> None:
    assert reports_error({**gadget("g"), "status": status})


@pytest.mark.parametrize(
    "status",
    [
        None,
        {"error": None, "replicas": 2},
        {"errors": []},
        {"phase": "Running"},
        {"conditions": [{"type": "Ready", "status": "False", "reason": "Progressing"}]},
        {"conditions": [{"type": "Degraded", "status": "False"}]},
    ],
)
def test_a_status_that_reports_no_error_is_no_refusal(status: dict[str, Any] | None) -> None:
    assert not reports_error({**gadget("g"), "status": status})


KEEPS_THE_LAST_GOOD_SIZE = """
import kopf


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
def check(spec, patch, **_):
    if not spec.get("size"):
        patch.status["error"] = "a gadget of size 0 makes no sense"
        return
    patch.status["error"] = None
    patch.status["size"] = spec["size"]  # kept while a bad size is refused: the last good one seen
"""


def test_a_final_spec_refused_in_the_status_is_not_compared(tmp_path: Path) -> None:
    """With no faults, the operator sees 0, 5, 0 and keeps size 5 from the good spec; with a 500 on its first status
    write (retried by kopf's client a second later), it sees 0 and then 0 (5 came and went meanwhile), and has no size
    to keep. Both refuse the final spec: what they keep from before is history, not a difference."""
    operator = tmp_path / "refuser.py"
    operator.write_text(KEEPS_THE_LAST_GOOD_SIZE)

    def end_state_of(faulted: bool) -> tuple[World, list[dict[str, Any]]]:
        world = World(OperatorSpec(paths=(str(operator),), manifests=(CRD,)))
        if faulted:
            path = "^/apis/checks.example/v1/namespaces/default/gadgets/g/status$"
            world.cluster.sim.faults.error(500, method="PATCH", path=path, count=1)
        world.run(world.cluster.create(gadget("g", size=0)))
        world.run(caught_up(world.operator))
        for size in (5, 0):
            world.run(world.cluster.patch(RESOURCE, "g", {"spec": {"size": size}}))
            world.run(caught_up(world.operator))
        assert world.run(world.settle())
        return world, end_state(world.cluster)

    baseline, expected = end_state_of(faulted=False)
    baseline.close()
    faulted, actual = end_state_of(faulted=True)
    try:
        [kept] = [obj["status"] for obj in expected if obj["kind"] == "Gadget"]
        [lost] = [obj["status"] for obj in actual if obj["kind"] == "Gadget"]
        assert kept.get("size") == 5 and "size" not in lost  # the histories differ, as the docstring says
        options: dict[str, Any] = dict(checks=["retries"], resources=[RESOURCE], expected=expected)
        faulted.run(verify(faulted.cluster, faulted.operator, **options))  # no failure: not comparable
    finally:
        faulted.close()


RECORDING_CHANGES = """
import kopf

@kopf.on.create("gadgets")
def create_fn(spec, patch, **_):
    patch.status["size"] = spec.get("size")

@kopf.on.update("gadgets", field="spec.size")
def size_fn(old, new, patch, **_):
    patch.status["size"] = new
    patch.status["lastChange"] = {"old": old, "new": new}  # a record of the change: never made at a creation
    patch.status["errorMessage"] = None if new else "a size of 0"  # how it is doing: state, though set on updates only
"""


async def test_the_status_fields_only_the_handling_of_updates_writes_are_records_of_changes(
    kopf_cluster: Any, kopf_operator: Any, tmp_path: Path
) -> None:
    path = tmp_path / "operator.py"
    path.write_text(RECORDING_CHANGES)
    await kopf_cluster.apply(CRD)
    trace = record_trace(kopf_cluster)
    await kopf_operator.start(paths=[path])
    await kopf_cluster.create(gadget("g", size=3))
    await settle(kopf_cluster, kopf_operator)
    await patch_and_revert(kopf_cluster, kopf_operator, RESOURCE, "g", {"spec": {"size": 5}})
    resources = [await kopf_cluster.resolve(RESOURCE)]
    records = history_records(trace.entries, kopf_operator, resources)
    # size: written at the creation too (the object's state); lastChange: by the handling of the updates only.
    assert records.change_keys == {"lastChange"} and not records.status_keys
    ids = handler_ids(kopf_operator)
    found = unreverted(reversals(kopf_cluster), driven=DRIVEN, handlers=ids)
    assert found is not None and "lastChange" in found  # a difference unless told as a record
    assert unreverted(reversals(kopf_cluster), driven=DRIVEN, handlers=ids, records=records) is None
    # Across histories it is set aside; two runs of the same changes still compare it (an observation lost).
    [state] = [obj for obj in end_state(kopf_cluster) if obj["kind"] == "Gadget"]
    assert across_histories([state], driven=DRIVEN, records=records)[0]["status"] == {"size": 3}
    lost = {**state, "status": {"size": 3, "lastChange": {"old": 3, "new": 3}}}
    assert unseen_records_aside([lost], [state], driven=DRIVEN, records=records) == [lost]
