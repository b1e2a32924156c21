"""``kopf_operator.crash()``: killed as by SIGKILL (no cleanup, nothing written after), then restarted afresh."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import kopf
from pytest_kopf.cluster import KopfCluster
from pytest_kopf.driving import caught_up, crash_after, settle
from pytest_kopf.operator import KopfOperator

CRD = Path(__file__).parent.parent.parent / "examples" / "crd.yaml"


def example(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {"field": "x"}}


def slow_registry(calls: list[str], cleanups: list[str]) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(name: str, **_: Any) -> str:
        calls.append(name)
        await asyncio.sleep(10)
        return "done"

    @kopf.on.delete("kopfexamples", registry=registry)
    async def delete_fn(**_: Any) -> None:
        pass

    @kopf.on.cleanup(registry=registry)
    async def cleanup_fn(**_: Any) -> None:
        cleanups.append("cleanup")

    return registry


async def test_a_crash_abandons_the_handlers_in_flight_and_a_restart_redoes_them(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    calls: list[str] = []
    cleanups: list[str] = []
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=slow_registry(calls, cleanups))
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(5)
    assert calls == ["ex1"]
    await kopf_operator.crash()
    assert kopf_operator.crashed and not kopf_operator.running and kopf_operator.exit_code == 137
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj is not None and "create_fn" not in obj.get("status", {})
    rv = obj["metadata"]["resourceVersion"]
    await asyncio.sleep(30)  # nothing of the dead operator writes anymore
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj is not None and obj["metadata"]["resourceVersion"] == rv

    await kopf_operator.restart()
    assert kopf_operator.running and not kopf_operator.crashed
    obj = await kopf_cluster.wait_for("kopfexamples", "ex1", condition=lambda o: o["status"]["create_fn"] == "done")
    assert calls == ["ex1", "ex1"]
    await kopf_operator.stop()
    assert cleanups == ["cleanup"]  # only the graceful stop ran the cleanup handler
    assert kopf_operator.exception is None and kopf_operator.exit_code == 0


async def test_a_crash_after_the_kth_write_leaves_that_write_done(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    calls: list[str] = []
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=slow_registry(calls, []))
    kopf_cluster.sim.faults.crash_after(1, kopf_operator.crash, resource="kopfexamples")
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(60)
    assert kopf_operator.crashed and kopf_operator.crashes == 1
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj is not None and obj["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
    assert calls == []  # the finalizer was the first write; the handler never ran
    await kopf_operator.restart()
    await kopf_cluster.wait_for("kopfexamples", "ex1", condition=lambda o: o["status"]["create_fn"] == "done")
    await kopf_cluster.delete("kopfexamples", "ex1")
    await kopf_cluster.wait_gone("kopfexamples", "ex1")
    await kopf_operator.stop()


async def test_a_crash_while_stopping_ends_the_stop_and_the_restart_starts_afresh(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    from kopf._cogs.clients import api, errors
    from pytest_kopf.driving import crash_after

    registry = kopf.OperatorRegistry()

    @kopf.on.cleanup(registry=registry)
    async def cleanup_fn(**_: Any) -> None:  # its write is the last straw
        bye = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bye"}}
        with contextlib.suppress(errors.APIConflictError):
            await api.post("/api/v1/namespaces/default/configmaps", payload=bye, settings=kopf.OperatorSettings())

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    crash_after(kopf_cluster, kopf_operator, writes=1, resource="configmaps")
    await kopf_operator.restart()  # the graceful stop crashes half-way; a fresh operator is started anyway
    assert kopf_operator.running and kopf_operator.crashes == 1
    await asyncio.sleep(5)  # the restart scheduled after the crash finds it running: nothing more happens
    assert kopf_operator.running and kopf_operator.crashes == 1
    await kopf_operator.stop()


def mirroring_registry() -> kopf.OperatorRegistry:
    """Edge-triggered, with no resume handler: the field is written into the status on each change of it."""
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    @kopf.on.update("kopfexamples", field="spec.field", registry=registry)
    async def mirror_fn(spec: Any, patch: kopf.Patch, **_: Any) -> None:
        patch.status["field"] = spec.get("field")

    return registry


async def test_a_step_with_a_crash_ends_once_the_operator_is_back_and_caught_up(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """The crash comes right after the handler's status write for "y", before kopf marks "y" handled. Had the users
    set "x" again while the operator was down, the fresh one would see no change from "x" (the last handled) and
    the status would keep "y" for ever: the framework's hazard, not the operator's. The step waits for the restart."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=mirroring_registry())
    await kopf_cluster.create(example("ex1"))
    await caught_up(kopf_operator)
    path = "^/apis/kopf.dev/v1/namespaces/default/kopfexamples/ex1/status$"
    crash_after(kopf_cluster, kopf_operator, writes=1, method="PATCH", path=path)
    await kopf_cluster.patch("kopfexamples", "ex1", {"spec": {"field": "y"}})
    await caught_up(kopf_operator)
    assert kopf_operator.crashes == 1 and kopf_operator.running  # back, and has seen "y" as not handled yet
    await kopf_cluster.patch("kopfexamples", "ex1", {"spec": {"field": "x"}})
    await caught_up(kopf_operator)
    assert await settle(kopf_cluster, kopf_operator)
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj is not None and obj["status"]["field"] == "x"


async def test_a_step_with_two_crashes_ends_once_the_operator_is_back_after_both(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """The restarted operator crashes again while catching up (a second crash planned after its first write): the
    step waits for the second restart too (outsider8's storm_ok saw the users' next change while it was down)."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=mirroring_registry())
    path = "^/apis/kopf.dev/v1/namespaces/default/kopfexamples/ex1/status$"
    crash_after(kopf_cluster, kopf_operator, writes=1, method="PATCH", path=path)
    crash_after(kopf_cluster, kopf_operator, writes=1, method="PATCH", path=path)
    await kopf_cluster.create(example("ex1"))
    await caught_up(kopf_operator)
    assert kopf_operator.crashes == 2 and kopf_operator.running


def child_registry() -> kopf.OperatorRegistry:
    """Edge-triggered: each change of the field is written into a child ConfigMap (made by the creation)."""
    from kopf._cogs.clients import api

    registry = kopf.OperatorRegistry()
    settings = kopf.OperatorSettings()
    settings.networking.error_backoffs = []  # a failed write fails the handler: kopf retries it after 60 s

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(name: str, spec: Any, **_: Any) -> None:
        child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-data"}}
        child["data"] = {"field": spec.get("field")}
        await api.post("/api/v1/namespaces/default/configmaps", payload=child, settings=settings)

    @kopf.on.update("kopfexamples", registry=registry)
    async def update_fn(name: str, spec: Any, **_: Any) -> None:
        payload = {"data": {"field": spec.get("field")}}
        await api.patch(f"/api/v1/namespaces/default/configmaps/{name}-data", payload=payload, settings=settings)

    return registry


async def test_a_step_with_a_failed_handler_ends_once_its_retry_is_done(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """The child's write for "y" lands but is answered 504: the handler fails, to be retried in 60 s. Had the users
    set "x" again meanwhile, kopf would see no change from "x" (the last handled) and drop the retry, and the child
    would keep "y" for ever: the framework's hazard, not the operator's. The step waits for the retry."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=child_registry())
    await kopf_cluster.create(example("ex1"))
    await caught_up(kopf_operator)
    path = "^/api/v1/namespaces/default/configmaps/ex1-data$"
    kopf_cluster.sim.faults.error(504, applied=True, method="PATCH", path=path, count=1)
    await kopf_cluster.patch("kopfexamples", "ex1", {"spec": {"field": "y"}})
    await caught_up(kopf_operator)
    await kopf_cluster.patch("kopfexamples", "ex1", {"spec": {"field": "x"}})
    await caught_up(kopf_operator)
    assert await settle(kopf_cluster, kopf_operator)
    child = await kopf_cluster.get("configmaps", "ex1-data")
    assert child is not None and child["data"] == {"field": "x"}
