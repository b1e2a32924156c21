"""A sync client called in an async handler: served with the operator's loop blocked, as in production; warned of.

Real operators call the official (sync) client from ``async def`` handlers: it blocks their event loop until
the answer comes, and it works. In sim mode, the simulated apiserver is served by the same loop: the request
is served in that thread by a loop of its own while the operator's loop stays blocked (nothing of it runs, its
clock stands still), and a warning names the handler, once.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import kubernetes
import pytest

import kopf
from pytest_kopf.checks import check_operator
from pytest_kopf.cluster import KopfCluster
from pytest_kopf.driving import crash_after
from pytest_kopf.errors import SyncClientInLoopWarning
from pytest_kopf.operator import KopfOperator

CRD = str(Path(__file__).parent.parent.parent / "examples" / "crd.yaml")
GALLERY = Path(__file__).parent.parent / "checks" / "gallery"
pytestmark = pytest.mark.kopf_sim_only


def example(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {}}


async def create_and_wait(kopf_cluster: KopfCluster, name: str, *handlers: str) -> None:
    """Create an object and wait until these handlers have succeeded (their results in its status)."""
    await kopf_cluster.create(example(name))
    await kopf_cluster.wait_for(
        "kopfexamples", name, condition=lambda obj: all(obj.get("status", {}).get(id) for id in handlers), timeout=300
    )


async def test_an_async_handler_with_the_official_client(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    seen: dict[str, Any] = {}

    @kopf.on.create("kopfexamples", id="blocking_create_fn", registry=registry)
    async def create_fn(name: str, namespace: str, **_: Any) -> str:
        loop = asyncio.get_running_loop()
        others_ran: list[bool] = []
        loop.call_soon(others_ran.append, True)  # would run at once if the loop were not blocked
        before = loop.time()
        kubernetes.config.load_kube_config()
        core = kubernetes.client.CoreV1Api()
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-child"}, "data": {"a": "1"}})
        core.patch_namespaced_config_map(f"{name}-child", namespace, {"data": {"a": "2"}})
        seen["read"] = core.read_namespaced_config_map(f"{name}-child", namespace).data
        seen["listed"] = sorted(cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items)
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-gone"}})
        core.delete_namespaced_config_map(f"{name}-gone", namespace)
        seen["blocked"] = (loop.time() - before, others_ran[:])
        await asyncio.sleep(0)
        seen["after"] = others_ran[:]
        return "done"

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    with pytest.warns(SyncClientInLoopWarning, match=r"The handler 'blocking_create_fn' calls a sync client") as record:
        await create_and_wait(kopf_cluster, "ex1", "blocking_create_fn")
    assert len([w for w in record if issubclass(w.category, SyncClientInLoopWarning)]) == 1  # once
    assert seen["read"] == {"a": "2"}
    assert seen["listed"] == ["ex1-child", "kube-root-ca.crt"]
    assert seen["blocked"] == (0.0, [])  # no time passed and nothing else ran in the loop during the calls
    assert seen["after"] == [True]
    assert await kopf_cluster.get("configmaps", "ex1-gone") is None
    await kopf_operator.stop()
    assert kopf_operator.exception is None and "Traceback" not in kopf_operator.logs, kopf_operator.logs


async def test_a_crash_right_after_the_write_of_a_blocked_loop(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", id="blocking_crashed_fn", registry=registry)
    async def create_fn(name: str, namespace: str, **_: Any) -> str:
        core = kubernetes.client.CoreV1Api()
        try:
            core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-child"}})
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:  # made before the crash: done
                raise
        return "made"

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    crash_after(kopf_cluster, kopf_operator, writes=1, resource="configmaps")
    with pytest.warns(SyncClientInLoopWarning):
        await create_and_wait(kopf_cluster, "ex1", "blocking_crashed_fn")
    assert kopf_operator.crashes == 1 and kopf_operator.running
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj is not None and obj["status"]["blocking_crashed_fn"] == "made"  # handled (after the restart)
    names = [cm["metadata"]["name"] for cm in await kopf_cluster.list("configmaps")]
    assert names.count("ex1-child") == 1
    await kopf_operator.stop()
    assert "failed with an exception" not in kopf_operator.logs, kopf_operator.logs  # the killed one said nothing


async def test_a_kept_connection_is_not_used_across_the_loop_and_the_threads(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator
) -> None:
    """One client (a module's global one) in an async handler and in a sync one: its pool reconnects as needed."""
    kubernetes.config.load_kube_config()
    core = kubernetes.client.CoreV1Api()
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", id="blocking_shared_fn", registry=registry)
    async def in_the_loop(name: str, namespace: str, **_: Any) -> str:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-loop"}})
        return "made"

    @kopf.on.create("kopfexamples", id="threaded_shared_fn", registry=registry)
    def in_a_thread(name: str, namespace: str, **_: Any) -> str:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-thread"}})
        return "made"

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    with pytest.warns(SyncClientInLoopWarning):
        await create_and_wait(kopf_cluster, "ex1", "blocking_shared_fn", "threaded_shared_fn")
    for name in ("ex2", "ex3"):
        await create_and_wait(kopf_cluster, name, "blocking_shared_fn", "threaded_shared_fn")
    names = {cm["metadata"]["name"] for cm in await kopf_cluster.list("configmaps")}
    assert {f"ex{i}-{where}" for i in (1, 2, 3) for where in ("loop", "thread")} <= names
    await kopf_operator.stop()
    assert "Traceback" not in kopf_operator.logs, kopf_operator.logs


@pytest.mark.long_running
def test_under_check_operator(tmp_path: Path) -> None:
    path = tmp_path / "operator.py"
    path.write_text(
        textwrap.dedent(
            """
            import kopf
            import kubernetes


            @kopf.on.create("gadgets")
            @kopf.on.update("gadgets")
            async def ensure_child(name, namespace, spec, body, **_):
                child = {"metadata": {"name": f"{name}-data"}, "data": {"size": str(spec.get("size", 0))}}
                kopf.append_owner_reference(child, owner=body)
                core = kubernetes.client.CoreV1Api()
                try:
                    core.create_namespaced_config_map(namespace, child)
                except kubernetes.client.ApiException as exc:
                    if exc.status != 409:
                        raise
                    core.patch_namespaced_config_map(f"{name}-data", namespace, {"data": child["data"]})
                return "ensured"
            """
        )
    )
    with pytest.warns(SyncClientInLoopWarning, match="'ensure_child"):
        report = check_operator(
            paths=[path],
            manifests=[GALLERY / "crd.yaml"],
            resources=["gadgets.checks.example"],
            checks=["convergence", "crash-restart", "idempotence"],
            max_examples=10,
            max_steps=5,
            names=["obj-0"],
        )
    assert report.per_check["crash-restart"]["reach"]["succeeded"] > 0
