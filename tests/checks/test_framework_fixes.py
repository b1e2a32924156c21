"""Regression tests of the framework & simulator weaknesses that the checks have found (see docs/checks.md)."""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
from pathlib import Path
from typing import Any

import kubernetes
import pytest

import kopf
from pytest_kopf._storms import RetryStorm, watch_storms
from pytest_kopf._tracing import Change, Delivery, Entry, Fault, Log, Request, Response
from pytest_kopf.cluster import KopfCluster
from pytest_kopf.driving import crash_after, settle
from pytest_kopf.operator import KopfOperator

CRD = Path(__file__).parent.parent.parent / "examples" / "crd.yaml"


def example(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {"field": "x"}}


def greeting_registry(calls: list[str]) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(name: str, **_: Any) -> str:
        calls.append(name)
        return f"hello, {name}"

    return registry


def handled(obj: dict[str, Any] | None) -> bool:
    annotations = (obj or {}).get("metadata", {}).get("annotations", {})
    return "kopf.zalando.org/last-handled-configuration" in annotations


def delay_patch(time: float, status: int = 200) -> list[Entry]:
    """kopf's patch of t1's progress that stores a retry delay of create_fn until 60 s, and its response."""
    record = '{"started": "2026-01-01T00:00:00+00:00", "delayed": "2026-01-01T00:01:00+00:00", "retries": 1}'
    path = "/apis/x.example/v1/namespaces/default/things/t1"
    body = json.dumps({"metadata": {"annotations": {"kopf.zalando.org/create_fn": record}}})
    request = Request(time, "PATCH", path, body=body)
    return [request, Response(time, "PATCH", path, status=status, request=request)]


def handler_log(time: float, message: str) -> Log:
    record = logging.LogRecord("kopf", logging.ERROR, __file__, 0, message, None, None)
    return Log(time, "ERROR", "default", "t1", message, record)


async def test_a_crash_between_the_two_patches_never_loses_the_results(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    calls: list[str] = []
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=greeting_registry(calls))
    crash_after(kopf_cluster, kopf_operator, writes=1, resource="kopfexamples", method="PATCH")
    await kopf_cluster.create(example("ex1"))
    assert await settle(kopf_cluster, kopf_operator)
    assert kopf_operator.crashes == 1
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert handled(obj)
    assert obj is not None and obj["status"]["create_fn"] == "hello, ex1"  # lost if "handled" went first


async def test_a_conflict_on_kopfs_own_patch_is_retried(kopf_cluster: KopfCluster, kopf_operator: KopfOperator) -> None:
    calls: list[str] = []
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=greeting_registry(calls))
    rule = kopf_cluster.sim.faults.conflict(resource="kopfexamples", count=1)
    await kopf_cluster.create(example("ex1"))
    obj = await kopf_cluster.wait_for("kopfexamples", "ex1", condition=handled, timeout=120)
    assert rule.hits == 1
    assert obj is not None and obj["status"]["create_fn"] == "hello, ex1"


async def test_server_errors_beyond_the_clients_retries_are_retried_later(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    calls: list[str] = []
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=greeting_registry(calls))
    rule = kopf_cluster.sim.faults.error(503, resource="kopfexamples", method="PATCH", count=12)
    await kopf_cluster.create(example("ex1"))
    obj = await kopf_cluster.wait_for("kopfexamples", "ex1", condition=handled, timeout=600)
    assert rule.hits == 12
    assert obj is not None and obj["status"]["create_fn"] == "hello, ex1"


async def test_a_hung_async_daemon_is_cancelled_on_exit(kopf_cluster: KopfCluster, kopf_operator: KopfOperator) -> None:
    registry = kopf.OperatorRegistry()
    started: list[float] = []

    @kopf.daemon("kopfexamples", registry=registry)
    async def hung(**_: Any) -> None:
        started.append(asyncio.get_running_loop().time())
        while True:  # noqa: ASYNC110 - it ignores the stop-flag, and has no cancellation timeout
            await asyncio.sleep(10)

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(30)
    assert started
    loop = asyncio.get_running_loop()
    before = loop.time()
    await kopf_operator.stop(timeout=60)  # a KopfLeakError if the exit hangs
    assert loop.time() - before < 10
    assert "they are cancelled" in kopf_operator.logs


async def test_events_of_a_ticking_timer_do_not_keep_the_operator_from_being_quiet(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()

    @kopf.timer("kopfexamples", interval=1, registry=registry)
    async def tick(**_: Any) -> str:
        return "same"

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    loop = asyncio.get_running_loop()
    before = loop.time()
    assert await settle(kopf_cluster, kopf_operator, quiet=30, timeout=120)
    assert loop.time() - before < 60
    assert len(await kopf_cluster.events("kopfexamples", "ex1")) > 10  # it posts an event every tick


def test_a_handler_called_before_its_retry_delay_is_reported() -> None:
    from kopf_sim.timing.virtualtime import DEFAULT_EPOCH
    from pytest_kopf._judges import early_retries

    entries = [*delay_patch(0.1), handler_log(30.0, "Handler 'create_fn' failed temporarily: too early")]
    assert early_retries(entries, DEFAULT_EPOCH) == [
        "default/t1: handler 'create_fn' was called again at 30.000 s, before its retry delay was over (at 60.000 s)"
    ]
    assert (
        early_retries([*entries[:2], handler_log(60.0, "Handler 'create_fn' failed temporarily")], DEFAULT_EPOCH) == []
    )


def test_a_retry_delay_whose_write_has_failed_is_not_held_against_the_handler() -> None:
    """Found by the long run: a 409 on kopf's patch of the delay; kopf processes the object again after throttling."""
    from kopf_sim.timing.virtualtime import DEFAULT_EPOCH
    from pytest_kopf._judges import early_retries

    entries = [*delay_patch(0.1, status=409), handler_log(1.1, "Handler 'create_fn' failed temporarily: again")]
    assert early_retries(entries, DEFAULT_EPOCH) == []


def test_conflicts_on_the_handlers_and_kopfs_patches_pass_the_retries_check() -> None:
    """The long run's case: the handler's own patch and kopf's patch of its retry delay both get a 409."""
    from pytest_kopf.checks import verify
    from pytest_kopf.stateful import OperatorSpec, World

    gallery = Path(__file__).parent / "gallery"
    world = World(OperatorSpec(paths=(str(gallery / "crash_child_ok.py"),), manifests=(str(gallery / "crd.yaml"),)))
    try:
        world.cluster.sim.faults.conflict(method=["PUT", "PATCH"], count=3)
        world.run(
            world.cluster.create(
                {
                    "apiVersion": "checks.example/v1",
                    "kind": "Gadget",
                    "metadata": {"name": "obj-0", "namespace": "default"},
                    "spec": {},
                }
            )
        )
        world.run(
            verify(
                world.cluster,
                world.operator,
                checks=["convergence", "retries"],
                resources=["gadgets.checks.example"],
                trace=world.trace,
            )
        )
        assert "fault conflict 409: PATCH /apis/checks.example" in world.trace.text()
    finally:
        world.close()


async def test_settling_waits_for_the_events_withheld_from_a_watcher(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """Found by the long run: events held back longer than the quiet period passed for a quiet operator."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=greeting_registry([]))
    kopf_cluster.sim.faults.withhold_events(45.0, resource="kopfexamples", count=1)
    kopf_cluster.sim.store.close_watches()
    await kopf_cluster.create(example("ex1"))
    assert await settle(kopf_cluster, kopf_operator, quiet=30)
    assert kopf_cluster.sim.store.withheld() == 0
    assert handled(await kopf_cluster.get("kopfexamples", "ex1"))


async def test_settling_waits_for_what_the_clusters_controllers_have_scheduled(kopf_cluster: KopfCluster) -> None:
    """Found by an outsider's operator (outsider9, a migration Job per image, ttlSecondsAfterFinished: 60): a world
    that settled 30 s after the Job had finished still had it, one that settled later had not (the cluster deletes it
    60 s after it finished): 'transition' reported the Job as a difference. The run is over once that is done."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": "default"},
        "spec": {
            "ttlSecondsAfterFinished": 60,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}},
        },
    }
    await kopf_cluster.create(job)
    assert await settle(kopf_cluster, quiet=30)
    assert [obj["metadata"]["name"] for obj in await kopf_cluster.list("jobs")] == []
    assert kopf_cluster.sim.controllers.pending() == []


async def test_a_timer_is_called_again_after_the_events_withheld_from_it_have_come(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """Found by the event-pair plans (a false alarm on a correct operator): a change's event was held until the
    timer's next write; that call saw the object as it was before the change, and settling (quiet since the
    call, which wrote only a timestamp) ended before the timer had ever seen the change."""
    registry = kopf.OperatorRegistry()

    @kopf.timer("kopfexamples", interval=60, registry=registry)
    async def reconcile(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
        patch.status["field"] = spec.get("field")
        patch.status["lastReconciled"] = datetime.datetime.now(datetime.UTC).isoformat()

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    assert await settle(kopf_cluster, kopf_operator)
    kopf_cluster.sim.faults.hold_event("kopfexamples.kopf.dev", "default", "ex1", coalesce=True, window=65)
    await kopf_cluster.patch("kopfexamples", "ex1", {"spec": {"field": "y"}})
    assert await settle(kopf_cluster, kopf_operator)
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj is not None and obj["status"]["field"] == "y"


def test_a_delay_unseen_by_a_fresh_operator_with_a_stale_view_is_not_held_against_the_handler() -> None:
    """Found by the long run: the delay stored, a crash, and the fresh operator's list served from an older revision."""
    from kopf_sim.timing.virtualtime import DEFAULT_EPOCH
    from pytest_kopf._judges import early_retries

    patch, accepted = delay_patch(0.1)
    crash = Fault(0.1, "crash after write #3: PATCH /apis/x.example/v1/namespaces/default/things/t1")
    stale = Fault(1.1, "stale read (-2 revisions): GET /apis/x.example/v1/things")
    early = handler_log(1.2, "Handler 'create_fn' failed temporarily: again")
    assert early_retries([stale, patch, accepted, crash, early], DEFAULT_EPOCH) == []
    assert early_retries([patch, accepted, crash, early], DEFAULT_EPOCH) != []  # a fresh view must honour it
    assert early_retries([stale, patch, accepted, early], DEFAULT_EPOCH) != []  # the same operator knows it


async def test_stray_progress_on_a_handled_object_is_removed(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """Found by the long run: a restarted operator listed an older revision, ran the creation again, and left its
    retry record on the object that was handled meanwhile; nothing would ever continue or remove it."""
    calls: list[str] = []
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=greeting_registry(calls))
    await kopf_cluster.create(example("ex1"))
    assert await settle(kopf_cluster, kopf_operator)
    stray = (
        '{"started": "2026-01-01T00:00:01+00:00", "delayed": "2026-01-01T00:01:01+00:00", "purpose": "create", '
        '"retries": 1, "success": false, "failure": false}'
    )
    annotations = {"kopf.zalando.org/create_fn": stray}
    await kopf_cluster.patch("kopfexamples", "ex1", {"metadata": {"annotations": annotations}})
    assert await settle(kopf_cluster, kopf_operator)
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj is not None and "kopf.zalando.org/create_fn" not in obj["metadata"].get("annotations", {})
    assert handled(obj) and calls == ["ex1"]  # handled once; the stray record is only removed


def test_the_handling_of_a_deleted_object_never_marks_its_same_named_successor_handled() -> None:
    """Found by the long run: the operator, its events held back, handled an object already deleted and re-created
    under the same name; its patches (by name) marked the new one handled, whose child the collector had deleted
    (it was owned by the old one). kopf's patches now carry the uid as a precondition (409: that object is gone)."""
    from pytest_kopf.stateful import OperatorMachine
    from pytest_kopf.strategies import Create, Delete, WithheldEvents

    gallery = Path(__file__).parent / "gallery"
    machine = OperatorMachine.configured(
        "Recreated",
        paths=[gallery / "hammering_ok.py"],
        manifests=[gallery / "crd.yaml"],
        resources=["gadgets.checks.example"],
        checks=["convergence", "idempotence"],
        names=["obj-0"],
    )
    body = {
        "apiVersion": "checks.example/v1",
        "kind": "Gadget",
        "metadata": {"name": "obj-0", "namespace": "default"},
        "spec": {},
    }
    machine.replay(
        [
            Create(body),
            WithheldEvents("gadgets", 1.0, False, 1),
            Delete("gadgets.checks.example", "obj-0"),
            Create(body),
        ]
    )  # OperatorCheckFailed if the new object is left without its child


def test_a_retry_delay_of_a_deleted_object_is_not_held_against_its_successor() -> None:
    """Found by the long run: an object deleted and re-created under the same name is handled at once."""
    from kopf_sim.timing.virtualtime import DEFAULT_EPOCH
    from pytest_kopf._judges import early_retries

    deleted = Change(2.0, "DELETED", "x.example", "things", "default", "t1", 20)
    early = handler_log(2.1, "Handler 'create_fn' failed temporarily: again")
    assert early_retries([*delay_patch(0.1), deleted, early], DEFAULT_EPOCH) == []
    assert early_retries([*delay_patch(0.1), early], DEFAULT_EPOCH) != []


def test_a_delay_purged_with_its_cycle_is_not_waited_for() -> None:
    # The copier (realistic/copier.py) under `retries` at the docs' budget: a 500 delays its update handler by 60 s;
    # the user reverts the change (kopf purges the handler's progress: no change left to handle) and makes it
    # again: a new cycle, whose handler runs at once. Not a retry before its delay.
    from kopf_sim.timing.virtualtime import DEFAULT_EPOCH
    from pytest_kopf._judges import early_retries

    path = "/apis/x.example/v1/namespaces/default/things/t1"
    purge = Request(
        0.2, "PATCH", path, body=json.dumps({"metadata": {"annotations": {"kopf.zalando.org/create_fn": None}}})
    )
    again = handler_log(0.3, "Handler 'create_fn' succeeded.")
    purged = [*delay_patch(0.1), purge, Response(0.2, "PATCH", path, status=200, request=purge)]
    assert early_retries([*purged, again], DEFAULT_EPOCH) == []
    refused = [*delay_patch(0.1), purge, Response(0.2, "PATCH", path, status=500, request=purge)]
    assert early_retries([*refused, again], DEFAULT_EPOCH) != []  # the purge not stored: the delay holds


def test_creates_answered_already_exists_are_not_hammering() -> None:
    """Found by the long run: create-or-patch of children by several objects and restarts in one second."""
    from pytest_kopf._judges import hammered

    def answered(status: int) -> list[Entry]:
        requests = [Request(35 + i / 10, "POST", "/api/v1/namespaces/default/configmaps") for i in range(5)]
        return [Response(r.time, r.method, r.path, status=status, request=r) for r in requests]

    assert hammered(answered(409)) == []
    assert hammered(answered(503)) == [
        "POST /api/v1/namespaces/default/configmaps: failed 5 times within the second 35, retried with no back-off"
    ]


def gadget_machine(operator: str, checks: list[str]) -> type[Any]:
    from pytest_kopf.stateful import OperatorMachine

    gallery = Path(__file__).parent / "gallery"
    return OperatorMachine.configured(
        f"Fixes_{operator}",
        paths=[gallery / f"{operator}.py"],
        manifests=[gallery / "crd.yaml"],
        resources=["gadgets.checks.example"],
        checks=checks,
        names=["obj-0"],
        settle_timeout=300,
    )


GADGET = {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": "obj-0", "namespace": "default"}}


def test_a_change_during_a_creation_of_several_cycles_is_handled_as_an_update() -> None:
    """Found by the event-pair plans: the creation took two cycles (its events came late, after a change of the
    spec); the diff-base stored at its end was the changed spec, which no handler had seen: the change was lost."""
    from pytest_kopf.strategies import Create, PatchSpec
    from pytest_kopf.strategies.placed import HeldEvent

    machine = gadget_machine("representative", ["convergence", "withheld-events"])
    machine.replay(
        [
            HeldEvent("gadgets.checks.example", "default", "obj-0", coalesce=False, window=5.0, skip=1),
            Create({**GADGET, "spec": {"size": 5}}),
            PatchSpec("gadgets.checks.example", "obj-0", {"size": None}),
        ]
    )  # OperatorCheckFailed if the status & the child keep the size 5


def test_an_older_version_seen_late_is_compared_with_the_diffbase_stored_last() -> None:
    """Found by the random faults: events held back for 54 s; kopf gave up waiting for its own patched version
    and processed an older one, whose diff-base was older than the one it had stored: the size, changed and
    changed back meanwhile, looked unchanged, and stayed as it was."""
    from pytest_kopf.strategies import Advance, Create, PatchSpec, Redeliver, WithheldEvents

    machine = gadget_machine("coalesced_field_ok", ["convergence", "idempotence"])
    machine.replay(
        [
            WithheldEvents("gadgets", 54.0, coalesce=False, count=1),
            Create({**GADGET, "spec": {}}),
            Advance(94.0),
            PatchSpec("gadgets.checks.example", "obj-0", {"size": 2}),
            PatchSpec("gadgets.checks.example", "obj-0", {"mode": "slow", "size": None}),
            Advance(66.0),
            Redeliver(),
        ]
    )  # OperatorCheckFailed if the status keeps the size 2


@pytest.mark.timeout(30)  # without the watch, the settling never ends: virtual time stands still
async def test_a_failed_request_repeated_at_once_fails_the_run_as_a_storm(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """A sync daemon that repeats a failing request with no wait (``except ApiException: continue``) keeps the loop
    busy at one virtual instant: the checks' runs of such an operator never ended, their traces growing by the GB."""
    registry = kopf.OperatorRegistry()

    @kopf.daemon("kopfexamples", registry=registry)
    def poll(stopped: kopf.DaemonStopped, namespace: str, **_: Any) -> None:
        kubernetes.config.load_kube_config()
        api = kubernetes.client.CoreV1Api()
        for _ in range(150):  # a hot loop, bounded here so that the test ends without the watch too
            try:
                api.read_namespaced_config_map("missing", namespace)
            except kubernetes.client.ApiException:
                continue
        stopped.wait(3600)

    await kopf_cluster.apply(CRD)
    watch_storms(kopf_cluster)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    with pytest.raises(RetryStorm, match="GET /api/v1/namespaces/default/configmaps/missing has failed 100 times"):
        await settle(kopf_cluster, kopf_operator)


async def test_an_object_filtered_out_by_when_is_not_unhandled(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    # Every change-detecting handler filters paused objects out: kopf leaves them alone (no diff-base stored),
    # by design; the convergence judge must not call their latest state unhandled (outsider8's when_ok did).
    from pytest_kopf._judges import _unhandled

    registry = kopf.OperatorRegistry()

    def running(spec: kopf.Spec, **_: Any) -> bool:
        return not spec.get("paused")

    @kopf.on.create("kopfexamples", registry=registry, when=running)
    @kopf.on.update("kopfexamples", field="spec", registry=registry, when=running)
    def sync_fn(**_: Any) -> None:
        pass

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    assert await settle(kopf_cluster, kopf_operator)
    await kopf_cluster.patch("kopfexamples", "ex1", {"spec": {"paused": True}})
    assert await settle(kopf_cluster, kopf_operator)
    resource = await kopf_cluster.resolve("kopfexamples")
    assert _unhandled(kopf_cluster, kopf_operator, [resource], "default") == []


async def test_a_handler_done_in_an_earlier_cycle_of_an_update_runs_again_for_the_change_that_came_meanwhile(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """Found by sieve9's random faults (a correct twin, 'retries'): an update took two cycles (the status patch of
    its first handler failed once, and kopf's client retried it a second later); meanwhile, the mode was removed.
    The second cycle handled the rest of the update and stored the state it began with as handled; the next cycle
    then handled the mode's removal, but took the mode's handler as done by the record of its earlier run, never
    purged: the status kept the removed mode."""
    registry = kopf.OperatorRegistry()

    @kopf.on.field("gadgets", field="spec.mode", registry=registry)
    async def mode_fn(new: Any, patch: kopf.Patch, **_: Any) -> None:
        patch.status["mode"] = new

    @kopf.on.update("gadgets", field="spec.size", registry=registry)
    async def size_fn(new: Any, patch: kopf.Patch, **_: Any) -> None:
        patch.status["size"] = new

    await kopf_cluster.apply(Path(__file__).parent / "gallery" / "crd.yaml")
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create({**GADGET, "spec": {}})
    await settle(kopf_cluster, kopf_operator)
    kopf_cluster.sim.faults.error(500, method="PATCH", path="/status$", resource="gadgets", count=1)
    await kopf_cluster.patch("gadgets.checks.example", "obj-0", {"spec": {"mode": "slow", "size": 0}})
    await asyncio.sleep(0.001)  # the mode's handler has run; its status patch waits for the client's retry
    await kopf_cluster.patch("gadgets.checks.example", "obj-0", {"spec": {"mode": None}})
    await settle(kopf_cluster, kopf_operator)
    obj = await kopf_cluster.get("gadgets.checks.example", "obj-0")
    assert obj is not None and obj["status"] == {"size": 0}


TALLY = """
import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()
URL = "/api/v1/namespaces/default/configmaps"


@kopf.on.create("gadgets")
async def count_fn(name, **_):
    try:  # a tally of every gadget ever made, made at the first one (nobody's child: it outlives them)
        await api.post(URL, payload={"metadata": {"name": "tally"}, "data": {}}, settings=SETTINGS)
    except errors.APIConflictError:
        pass
    await api.patch(f"{URL}/tally", payload={"data": {name: "seen"}}, settings=SETTINGS)


@kopf.on.delete("gadgets")  # so, a finalizer first: an object seen only once gone gets none, nor handling
async def forget_fn(**_):
    pass
"""


def test_an_object_whose_whole_life_the_operator_never_saw_is_no_difference(tmp_path: Path) -> None:
    """Found by sieve9's event-pair plans (a correct twin, 'withheld-events'): the event of a creation held until the
    next change of the object, its deletion, and coalesced with it: the operator never got an event of the object
    (no finalizer was put on it, so the deletion was done at once), and did nothing for it, where the fault-free
    run made what the operator makes once per object seen and keeps after it. A run in which the operator never
    saw an object at all is not comparable with one in which it did (a relist after a broken watch does the same on
    a real cluster: an object made and gone meanwhile is never seen)."""
    from pytest_kopf._observations import unseen_lifetimes
    from pytest_kopf.stateful import OperatorMachine
    from pytest_kopf.strategies import Create, Delete
    from pytest_kopf.strategies.placed import FailedRequest, HeldEvent

    operator = tmp_path / "tally.py"
    operator.write_text(TALLY)
    machine = OperatorMachine.configured(
        "Fixes_tally",
        paths=[operator],
        manifests=[Path(__file__).parent / "gallery" / "crd.yaml"],
        resources=["gadgets.checks.example"],
        checks=["withheld-events"],
        names=["obj-0"],
        settle_timeout=300,
    )
    machine.replay(
        [
            HeldEvent("gadgets.checks.example", "default", "obj-0", coalesce=True, window=5.0, skip=0),
            Create({**GADGET, "spec": {}}),
            Delete("gadgets.checks.example", "obj-0"),
        ]
    )  # OperatorCheckFailed if the tally that only the fault-free run has made is a difference
    machine.replay(
        [
            HeldEvent("gadgets.checks.example", "default", "obj-0", coalesce=False, window=5.0, skip=0),
            Create({**GADGET, "spec": {}}),
            Delete("gadgets.checks.example", "obj-0"),
        ]
    )  # the same with the creation's event sent late, once the object is gone: nothing to do for it either
    gadget = "/apis/checks.example/v1/namespaces/default/gadgets/obj-0"
    machine.replay(
        [
            FailedRequest(500, "PATCH", gadget, 0, 1, False),
            Create({**GADGET, "spec": {}}),
            Delete("gadgets.checks.example", "obj-0"),
        ]
    )  # its finalizer's patch answered 500, retried a second later: the object was gone by then

    # The objects whose life no event told the operator of: by their changes and the events delivered to it.
    made, gone = (
        Change(0.0, kind, "checks.example", "gadgets", "default", "obj-0", rv)
        for kind, rv in [("ADDED", 5), ("DELETED", 9)]
    )
    seen = Delivery(0.0, "ADDED", "checks.example", "gadgets", "default", "obj-0", 5)
    driven = {("checks.example", "gadgets")}
    assert unseen_lifetimes([made, gone], driven) == ["gadgets.checks.example default/obj-0"]
    only_gone = Delivery(0.0, "DELETED", "checks.example", "gadgets", "default", "obj-0", 9)
    assert unseen_lifetimes([made, gone, only_gone], driven) == ["gadgets.checks.example default/obj-0"]
    assert unseen_lifetimes([made, gone, seen, only_gone], driven) == ["gadgets.checks.example default/obj-0"]  # late
    assert unseen_lifetimes([made, seen, gone], driven) == []
    failed, landed = (Response(0.0, "PATCH", gadget, status=status) for status in (500, 200))
    assert unseen_lifetimes([made, seen, failed, gone], driven) == ["gadgets.checks.example default/obj-0"]
    assert unseen_lifetimes([made, seen, failed, landed, gone], driven) == []
    assert unseen_lifetimes([made], driven) == []  # alive at the end: its absence of events is another matter
