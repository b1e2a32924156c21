"""What correct operators written as real ones are must pass: each of these was a false alarm of a check.

Found by the realistic operators (``realistic/``), each shown here on its smallest operator.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_kopf._judges import hammered
from pytest_kopf._observations import HistoryRecords, late_snapshots_aside, unseen_records_aside
from pytest_kopf._tracing import Change, Entry, Request, Response
from pytest_kopf.checks import check_operator, verify
from pytest_kopf.driving import end_state, settle
from pytest_kopf.errors import OperatorCheckFailed

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "default"}
    return {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": metadata, "spec": spec}


#: One function for create & resume (one id): after a change, a restart stores its result anew.
RESUMING = """
import kopf

@kopf.on.create("gadgets")
@kopf.on.resume("gadgets")
def reconcile(spec, **_):
    return {"size": spec.get("size")}
"""


async def changed_after_creation(kopf_cluster: Any, kopf_operator: Any, tmp_path: Path) -> None:
    """The resuming operator has handled a gadget's creation, then its spec has changed (no handler for that)."""
    path = tmp_path / "operator.py"
    path.write_text(RESUMING)
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[path])
    await kopf_cluster.create(gadget("g", size=1))
    await settle(kopf_cluster, kopf_operator)
    await kopf_cluster.patch(RESOURCE, "g", {"spec": {"size": 2}})
    await settle(kopf_cluster, kopf_operator)


async def test_a_resume_handler_rewriting_its_result_is_idempotent(
    kopf_cluster: Any, kopf_operator: Any, tmp_path: Path
) -> None:
    await changed_after_creation(kopf_cluster, kopf_operator, tmp_path)
    await verify(kopf_cluster, kopf_operator, checks=["idempotence"], resources=[RESOURCE])
    assert (await kopf_cluster.get(RESOURCE, "g"))["status"]["reconcile"] == {"size": 2}  # rewritten, as designed


async def test_a_resume_handler_rewriting_its_result_after_a_crash_converges(
    kopf_cluster: Any, kopf_operator: Any, tmp_path: Path
) -> None:
    await changed_after_creation(kopf_cluster, kopf_operator, tmp_path)
    expected = end_state(kopf_cluster)  # as a run with no crash ends: the creation's result
    await kopf_operator.crash()
    await kopf_operator.restart()
    await settle(kopf_cluster, kopf_operator)
    await verify(kopf_cluster, kopf_operator, checks=["crash-restart"], resources=[RESOURCE], expected=expected)


def test_a_failure_that_its_rerun_does_not_repeat_is_reported_as_such(tmp_path: Path) -> None:
    # The first run of the handler (in any world) is stuck; the next ones are not: hypothesis's rerun passes.
    marker = tmp_path / "ran-once"
    path = tmp_path / "operator.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import pathlib
            import kopf

            @kopf.on.create("gadgets")
            def reconcile(**_):
                marker = pathlib.Path({str(marker)!r})
                if not marker.exists():
                    marker.touch()
                    raise kopf.TemporaryError("not yet", delay=10_000)
            """
        )
    )
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(paths=[path], manifests=[CRD], resources=[RESOURCE], checks=["convergence"], max_examples=10)
    assert info.value.check == "convergence"
    assert "not when hypothesis ran them again" in str(info.value)


def test_an_unshrunk_failure_is_reported_as_found(tmp_path: Path) -> None:
    # shrink=False: neither our shrinker nor hypothesis' own (hundreds of runs of long sequences) runs.
    calls = tmp_path / "calls"
    path = tmp_path / "operator.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import pathlib
            import kopf

            @kopf.on.create("gadgets")
            def reconcile(**_):
                with pathlib.Path({str(calls)!r}).open("a") as file:
                    file.write("x")
                raise kopf.TemporaryError("never", delay=10_000)
            """
        )
    )
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            paths=[path], manifests=[CRD], resources=[RESOURCE], checks=["convergence"], max_steps=10, shrink=False
        )
    assert info.value.check == "convergence"
    assert len(calls.read_text()) <= 4 * len(info.value.steps)  # the found example and its replay, not a search


#: The official client: the ConfigMap goes to a namespace that is made later (a 404 until then, retried by kopf).
LATE_NAMESPACE = """
import kubernetes
import kopf

@kopf.on.startup()
def configure(**_):
    kubernetes.config.load_kube_config()

@kopf.on.create("gadgets")
def reconcile(name, **_):
    body = {"metadata": {"name": name}, "data": {"made": "yes"}}
    kubernetes.client.CoreV1Api().create_namespaced_config_map("later", body)
"""

#: A bug of the handler's own: it fails once (not the API's answer), then succeeds when retried.
FLAKY_HANDLER = """
import kopf

attempts = []

@kopf.on.create("gadgets")
def reconcile(spec, **_):
    attempts.append(1)
    if len(attempts) == 1:
        return spec["missing"]
"""


@pytest.mark.parametrize(("source", "unexpected"), [(LATE_NAMESPACE, False), (FLAKY_HANDLER, True)])
async def test_an_api_error_that_kopf_retries_is_the_clusters_answer_not_an_unexpected_exception(
    kopf_cluster: Any, kopf_operator: Any, tmp_path: Path, source: str, unexpected: bool
) -> None:
    # E.g. a namespace being terminated refuses new content (403) until it is gone: kopf retries the handler.
    path = tmp_path / "operator.py"
    path.write_text(source)
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[path])
    await kopf_cluster.create(gadget("g", size=1))
    await kopf_cluster.sim.advance(10)
    await kopf_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "later"}})
    await settle(kopf_cluster, kopf_operator)
    if not unexpected:
        await verify(kopf_cluster, kopf_operator, checks=["convergence"], resources=[RESOURCE])
        assert await kopf_cluster.get("configmaps", "g", namespace="later") is not None
    else:
        with pytest.raises(OperatorCheckFailed, match="KeyError"):
            await verify(kopf_cluster, kopf_operator, checks=["convergence"], resources=[RESOURCE])


def test_an_observation_only_a_delayed_run_has_made_is_not_a_difference() -> None:
    # The smoke-test operator (realistic/smoketest) under `retries`: 500s on its status patches delay a scale-down
    # to 0 by seconds, so a pod lives long enough to be probed: status.lastProbe, written by the pods' handler,
    # is in the faulted run only. An observation lost (or changed) by a fault is still a difference.
    driven, records = [("checks.example/v1", "Gadget")], HistoryRecords(status_keys=frozenset({"lastProbe"}))
    probed = {**gadget("g"), "status": {"lastProbe": "Succeeded", "phase": "Ready"}}
    unprobed = {**gadget("g"), "status": {"phase": "Ready"}}
    assert unseen_records_aside([probed], [unprobed], driven=driven, records=records) == [unprobed]
    assert unseen_records_aside([unprobed], [probed], driven=driven, records=records) == [unprobed]
    failed = {**gadget("g"), "status": {"lastProbe": "Failed", "phase": "Ready"}}
    assert unseen_records_aside([failed], [probed], driven=driven, records=records) == [failed]
    ready = {**gadget("g"), "status": {"phase": "Creating"}}  # not a record: the object's own state
    assert unseen_records_aside([unprobed], [ready], driven=driven, records=records) == [unprobed]


def test_first_tries_of_several_handlers_and_objects_are_not_one_request_hammered() -> None:
    # A sites operator (realistic/sites/renamed_ok) under `retries`: four 500s on the Services' creates; two
    # sites, each with two handlers that make its Service, tried once each in the second 0 (kopf backs off).
    path = "/api/v1/namespaces/default/services"

    def posted(*senders: tuple[str, str, str]) -> list[Entry]:
        requests = [
            Request(i / 10, "POST", path, body=json.dumps({"metadata": {"name": child}}), handler=by, cause=cause)
            for i, (by, cause, child) in enumerate(senders)
        ]
        return [Response(r.time, r.method, r.path, status=500, request=r) for r in requests]

    first_tries = [
        (handler, f"default/{site}@{i}", f"{site}-www")
        for i, site in enumerate(["obj-0", "obj-1"])
        for handler in ["reconcile", "reconcile/spec.hostname"]
    ]
    assert hammered(posted(*first_tries)) == []
    again = [("reconcile", f"default/obj-0@{i % 2}", "obj-0-www") for i in range(4)]  # one handler, no back-off
    assert hammered(posted(*again)) == [f"POST {path}: failed 4 times within the second 0, retried with no back-off"]


def test_patches_of_namesakes_deleted_meanwhile_are_not_one_request_hammered() -> None:
    # An outsider's operator (outsider9's c4_field_ok) under `retries`: a WebApp created, deleted and created again
    # twice while four 500s delay its Service's creation by a second; then the handlings of the two deleted ones
    # end, each patching its progress and its touch-dummy with its own uid as a precondition: 409 x 4 in the second
    # 1 on the path of the third (the object there then), two per deleted object, each once (kopf backs off).
    path = "/apis/o9.example/v1/namespaces/default/webapps/obj-0"
    there = {"metadata": {"name": "obj-0", "uid": "uid-c"}}

    def patched(*uids: str) -> list[Entry]:
        requests = [
            Request(1 + i / 10, "PATCH", path, body=json.dumps({"metadata": {"uid": uid}}), addressed=there)
            for i, uid in enumerate(uids)
        ]
        return [Response(r.time, r.method, r.path, status=409, request=r) for r in requests]

    assert hammered(patched("uid-a", "uid-a", "uid-b", "uid-b")) == []
    assert hammered(patched(*["uid-a"] * 4)) == [
        f"PATCH {path}: failed 4 times within the second 1, retried with no back-off"
    ]


def test_reads_answered_not_found_are_not_hammering() -> None:
    # The Wazuh-like operator (realistic/wazuh) under `retries`: created, deleted and created again in one second,
    # its handler and timer look the DaemonSet up with pykube (`exists()`, `get_or_none()`): 404s are answers.
    def answered(method: str, status: int) -> list[Entry]:
        path = "/apis/apps/v1/namespaces/default/daemonsets/obj-0-agent"
        requests = [Request(i / 10, method, path) for i in range(4)]
        return [Response(r.time, r.method, r.path, status=status, request=r) for r in requests]

    assert hammered(answered("GET", 404)) == []
    assert hammered(answered("GET", 500)) != []
    assert hammered(answered("PATCH", 404)) != []  # a write of what is not there is a failure, retried
    # An outsider's operator (outsider9's c3_index_ok) deletes the shards beyond the spec's count by name, each
    # reconciliation, there or not: "not found" is an answer (four patches of the spec in one second).
    assert hammered(answered("DELETE", 404)) == []
    assert hammered(answered("DELETE", 500)) != []


def test_a_snapshot_made_per_pod_after_a_change_is_compared_by_its_presence_only() -> None:
    # The smoke-test operator (realistic/smoketest) under `retries`: a 500 on the Deployment's create delays its
    # pod's readiness by kopf's 60 s backoff, past the user's change of spec.probe; the pod's probe Job, made at its
    # readiness with the probe's path of that moment, has the new path in the faulted run, the old one in the
    # fault-free run. Both are right; a probe lost, or one made before the change and holding otherwise, is not.
    def change(i: int, kind: str, name: str, kind_type: str = "ADDED", **fields: Any) -> Change:
        api_version = {"Gadget": "checks.example/v1", "ReplicaSet": "apps/v1"}.get(kind, "v1")
        obj = {"apiVersion": api_version, "kind": kind, **fields}
        obj["metadata"] = {"name": name, "namespace": "default", **obj.get("metadata", {})}
        plural = f"{kind.lower()}s"
        return Change(float(i), kind_type, "", plural, "default", name, i, obj=obj)

    owner = {
        "metadata": {
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "controller": True}]
        }
    }
    pod = {"metadata": {"generateName": "web-", **owner["metadata"]}, "status": {"podIP": "10.0.0.7"}}
    by_pod = {
        "metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web-x7k2p", "controller": True}]}
    }
    probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe-web-*", "namespace": "default"}}
    old = {**probe, "data": {"url": "http://<pod IP>/healthz"}}
    new = {**probe, "data": {"url": "http://<pod IP>/ready"}}
    created, changed = (
        change(0, "Gadget", "g", spec={"size": 1}),
        change(3, "Gadget", "g", "MODIFIED", spec={"size": 2}),
    )
    late = [created, change(1, "ReplicaSet", "web"), change(2, "Pod", "web-x7k2p", **pod), changed]
    late.append(change(4, "ConfigMap", "probe-web-x7k2p", **by_pod, data={"url": "http://10.0.0.7/ready"}))
    driven = [("checks.example/v1", "Gadget")]
    identity = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe-web-*", "namespace": "default"}}
    assert late_snapshots_aside([new], [old], trace=late, driven=driven) == ([identity], [identity])
    assert late_snapshots_aside([], [old], trace=late, driven=driven) == ([], [identity])  # lost: still missing
    early = [*late[:3], change(3, "ConfigMap", "probe-web-x7k2p", **by_pod), change(4, "Gadget", "g", "MODIFIED")]
    assert late_snapshots_aside([new], [old], trace=early, driven=driven) == ([new], [old])  # made before it
    unchanged = late[:3] + late[4:]
    assert late_snapshots_aside([new], [old], trace=unchanged, driven=driven) == ([new], [old])


def test_first_patches_of_namesakes_made_anew_are_not_one_request_hammered() -> None:
    # timer_retry_ok and deployment_owner_ok+pod_names_ok under `retries` at the docs' budget: four 500s on the
    # gadget's PATCH; the gadget created, deleted and created again four times in a second: kopf's first patch of
    # each (its finalizer) failed once, and was retried a second later (a 409: that object is gone).
    path = "/apis/checks.example/v1/namespaces/default/gadgets/obj-0"

    def patched(*uids: str, known: bool = True) -> list[Entry]:
        requests = [
            Request(
                i / 10,
                "PATCH",
                path,
                body=json.dumps({"metadata": {"finalizers": ["kopf.zalando.org/KopfFinalizerMarker"], "uid": uid}}),
                addressed={"metadata": {"name": "obj-0", "uid": uid}} if known else NotImplemented,
            )
            for i, uid in enumerate(uids)
        ]
        return [Response(r.time, r.method, r.path, status=500, request=r) for r in requests]

    hammering = [f"PATCH {path}: failed 4 times within the second 0, retried with no back-off"]
    assert hammered(patched("a", "b", "c", "d")) == []
    assert hammered(patched("a", "b", "c", "d", known=False)) == []  # the uid that the patch names
    assert hammered(patched("a", "a", "a", "a")) == hammering
