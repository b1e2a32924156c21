"""Whole operators (kopf.operator) against a simulated cluster over the in-memory transport, in virtual time."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf._core.engines.activities import ActivityError
from kopf_sim.manifests import read_manifests
from kopf_sim.store.cluster import Cluster
from tests.helpers import example, wait_for

from .conftest import ROOT, kex, peek

pytestmark = pytest.mark.looptime


def handled(cluster: Cluster, name: str, namespace: str = "default") -> Any:
    obj = peek(cluster, namespace, name)
    return obj is not None and (obj.get("status") or {}).get("create_fn")


def events_of(cluster: Cluster, name: str, namespace: str = "default") -> list[dict[str, Any]]:
    key = cluster.resource("", "v1", "events").storage_key
    return [event for event in cluster.objects(key, namespace) if event["involvedObject"].get("name") == name]


def start(stop_flag: Any = None, **kwargs: Any) -> tuple[asyncio.Task[None], Any, asyncio.Event]:
    stop_flag, ready_flag = asyncio.Event() if stop_flag is None else stop_flag, asyncio.Event()
    kwargs.setdefault("clusterwide", True)
    task = asyncio.create_task(kopf.operator(stop_flag=stop_flag, ready_flag=ready_flag, **kwargs))
    return task, stop_flag, ready_flag


async def test_startup_ready_stop_cleanup(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault
) -> None:
    calls: list[str] = []

    @kopf.on.startup()
    async def startup_fn(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
        calls.append("startup")
        memo.greeting = "hello"
        settings.posting.enabled = False

    @kopf.on.cleanup()
    def cleanup_fn(memo: kopf.Memo, **_: Any) -> None:
        calls.append(f"cleanup {memo.greeting}")

    memo = kopf.Memo()
    task, stop_flag, ready_flag = start(registry=registry, settings=settings, vault=vault, memo=memo)
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    assert calls == ["startup"] and memo.greeting == "hello"
    assert settings.posting.enabled is False  # the same settings object is seen by the handlers.
    stop_flag.set()
    await asyncio.wait_for(task, timeout=30)
    assert calls == ["startup", "cleanup hello"]


async def test_cancelling_the_operator_runs_the_cleanup(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault
) -> None:
    cleaned = asyncio.Event()

    @kopf.on.cleanup()
    async def cleanup_fn(**_: Any) -> None:
        cleaned.set()

    task, _, ready_flag = start(registry=registry, settings=settings, vault=vault)
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned.is_set()


async def test_failed_startup_fails_the_operator_with_no_api_calls(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings
) -> None:
    cleaned: list[str] = []
    logins: list[str] = []

    @kopf.on.startup(retries=2, backoff=1)
    def startup_fn(**_: Any) -> None:
        raise ValueError("boom")

    @kopf.on.cleanup()
    def cleanup_fn(**_: Any) -> None:
        cleaned.append("cleanup")

    @kopf.on.login()
    def login_fn(**_: Any) -> None:
        logins.append("login")

    task, _, ready_flag = start(registry=registry, settings=settings, vault=Vault())
    with pytest.raises(ActivityError, match="boom"):
        await asyncio.wait_for(task, timeout=30)
    assert not ready_flag.is_set()
    assert cleaned == [] and logins == []


async def test_objects_are_handled_and_events_are_posted(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault, cluster: Cluster
) -> None:
    threads: list[str] = []

    @kopf.on.create("kopfexamples")
    async def create_fn(body: kopf.Body, name: str, **_: Any) -> dict[str, str]:
        kopf.warn(body, reason="AsyncReason", message="from an async handler")
        return {"message": f"hello {name}"}

    @kopf.on.create("kopfexamples")
    def sync_fn(body: kopf.Body, **_: Any) -> None:
        threads.append(threading.current_thread().name)
        kopf.info(body, reason="SyncReason", message="from a sync handler")
        try:
            raise RuntimeError("oops")
        except RuntimeError:
            kopf.exception(body, reason="ErrReason", message="caught:")

    task, stop_flag, ready_flag = start(registry=registry, settings=settings, vault=vault)
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    cluster.create(kex(cluster), "default", example("ex1", field="value"))
    status = await wait_for(lambda: handled(cluster, "ex1"))
    assert status == {"message": "hello ex1"}
    await wait_for(lambda: threads)
    assert threads[0] != threading.main_thread().name

    def posted() -> dict[str, tuple[str, str]]:
        return {event["reason"]: (event["type"], event["message"]) for event in events_of(cluster, "ex1")}

    await wait_for(lambda: {"AsyncReason", "SyncReason", "ErrReason"} <= set(posted()))
    assert posted()["AsyncReason"] == ("Warning", "from an async handler")
    assert posted()["SyncReason"] == ("Normal", "from a sync handler")
    assert posted()["ErrReason"] == ("Error", "caught: oops")
    assert posted().get("Logging", ("Normal", ""))[0] == "Normal"  # the handlers' success, from the logs.
    stop_flag.set()
    await asyncio.wait_for(task, timeout=30)


async def test_event_posting_can_be_disabled(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault, cluster: Cluster
) -> None:
    settings.posting.enabled = False

    @kopf.on.create("kopfexamples")
    def create_fn(body: kopf.Body, **_: Any) -> str:
        kopf.info(body, reason="SomeReason", message="not to be posted")
        return "done"

    task, stop_flag, ready_flag = start(registry=registry, settings=settings, vault=vault)
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    cluster.create(kex(cluster), "default", example("ex1"))
    await wait_for(lambda: handled(cluster, "ex1"))
    await asyncio.sleep(5)
    assert events_of(cluster, "ex1") == []
    stop_flag.set()
    await asyncio.wait_for(task, timeout=30)


def test_events_outside_of_operators_are_only_warned(caplog: pytest.LogCaptureFixture) -> None:
    kopf.event({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, type="Normal", reason="R")
    assert "outside of an operator" in caplog.text


async def test_login_handlers_populate_an_empty_vault(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, info: ConnectionInfo, cluster: Cluster
) -> None:
    logins: list[str] = []

    @kopf.on.login()
    async def login_fn(**_: Any) -> ConnectionInfo:
        logins.append("login")
        return info

    @kopf.on.create("kopfexamples")
    def create_fn(**_: Any) -> str:
        return "done"

    vault = Vault()
    task, stop_flag, ready_flag = start(registry=registry, settings=settings, vault=vault)
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    assert logins == ["login"] and list(vault.keys()) == ["login_fn"]
    cluster.create(kex(cluster), "default", example("ex1"))
    assert await wait_for(lambda: handled(cluster, "ex1")) == "done"
    stop_flag.set()
    await asyncio.wait_for(task, timeout=30)


async def test_login_with_nothing_fails_the_operator(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings
) -> None:

    @kopf.on.login()
    def login_fn(**_: Any) -> None:
        return None

    task, _, _ = start(registry=registry, settings=settings, vault=Vault())
    with pytest.raises(kopf.LoginError):
        await asyncio.wait_for(task, timeout=30)


async def test_namespace_patterns_and_namespaces_appearing_later(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault, cluster: Cluster
) -> None:
    namespaces = cluster.resource("", "v1", "namespaces")
    for name in ["app-1", "app-skip", "other"]:
        cluster.create(namespaces, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        cluster.create(kex(cluster), name, example("ex", namespace=name))

    @kopf.on.create("kopfexamples")
    def create_fn(namespace: str, **_: Any) -> str:
        return namespace

    task, stop_flag, ready_flag = start(
        registry=registry, settings=settings, vault=vault, clusterwide=False, namespaces=["app-*,!app-skip"]
    )
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    assert await wait_for(lambda: handled(cluster, "ex", "app-1")) == "app-1"

    cluster.create(namespaces, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app-2"}})
    await asyncio.sleep(1)
    cluster.create(kex(cluster), "app-2", example("ex", namespace="app-2"))
    assert await wait_for(lambda: handled(cluster, "ex", "app-2")) == "app-2"

    await asyncio.sleep(10)
    assert not handled(cluster, "ex", "app-skip")
    assert not handled(cluster, "ex", "other")
    stop_flag.set()
    await asyncio.wait_for(task, timeout=30)


async def test_namespace_given_singly_and_exactly(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault, cluster: Cluster
) -> None:
    cluster.create(kex(cluster), "default", example("ex1"))

    @kopf.on.create("kopfexamples")
    def create_fn(**_: Any) -> str:
        return "done"

    task, stop_flag, _ = start(
        registry=registry, settings=settings, vault=vault, clusterwide=False, namespace="default"
    )
    assert await wait_for(lambda: handled(cluster, "ex1")) == "done"
    stop_flag.set()
    await asyncio.wait_for(task, timeout=30)


async def test_resources_of_crds_appearing_later(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault
) -> None:
    cluster = Cluster()  # no CRDs yet
    from kopf_sim.http.app import build_app
    from kopf_sim.transports.inmemory import DEFAULT_BASE_URL, InMemoryServer

    async with InMemoryServer(build_app(cluster)) as server:
        the_vault = Vault({"sim": ConnectionInfo(server=DEFAULT_BASE_URL).with_connector_factory(server.connector)})

        @kopf.on.create("kopf.dev", "kopfexamples")
        def create_fn(**_: Any) -> str:
            return "done"

        task, stop_flag, ready_flag = start(registry=registry, settings=settings, vault=the_vault)
        await asyncio.wait_for(ready_flag.wait(), timeout=10)
        await asyncio.sleep(5)
        cluster.apply_manifests(read_manifests([ROOT / "examples" / "crd.yaml"]))
        await asyncio.sleep(1)
        cluster.create(kex(cluster), "default", example("ex1"))
        assert await wait_for(lambda: handled(cluster, "ex1")) == "done"
        stop_flag.set()
        await asyncio.wait_for(task, timeout=30)


async def test_manual_orchestration_as_documented(
    registry: kopf.OperatorRegistry, settings: kopf.OperatorSettings, vault: Vault, cluster: Cluster
) -> None:
    # The documented call: run_tasks(tasks, return_when=asyncio.FIRST_COMPLETED); the published Kopf refuses it.
    @kopf.on.create("kopfexamples")
    def create_fn(**_: Any) -> str:
        return "done"

    stop_flag = asyncio.Event()
    existing = asyncio.all_tasks()  # the test's own: not the operator's to stop
    tasks = await kopf.spawn_tasks(
        registry=registry, settings=settings, vault=vault, clusterwide=True, stop_flag=stop_flag
    )
    running = asyncio.create_task(kopf.run_tasks(tasks, ignored=existing, return_when=asyncio.FIRST_COMPLETED))
    cluster.create(kex(cluster), "default", example("kex1"))
    await wait_for(lambda: handled(cluster, "kex1"))
    stop_flag.set()
    await asyncio.wait_for(running, timeout=30)
    assert all(task.done() for task in tasks)


async def test_run_tasks_refuses_other_ways_to_return() -> None:
    task = asyncio.create_task(asyncio.sleep(0))
    with pytest.raises(ValueError, match=r"return_when must be asyncio.FIRST_COMPLETED, got 'ALL_COMPLETED'"):
        await kopf.run_tasks([task], return_when=asyncio.ALL_COMPLETED)
    await task


@pytest.mark.parametrize(
    ("make_flag", "value"),
    [
        (asyncio.Event, True),
        (threading.Event, True),
        (lambda: asyncio.get_running_loop().create_future(), "bye"),
    ],
)
async def test_the_stop_is_logged_with_the_flags_value(
    registry: kopf.OperatorRegistry,
    settings: kopf.OperatorSettings,
    vault: Vault,
    caplog: pytest.LogCaptureFixture,
    make_flag: Any,
    value: Any,
) -> None:
    """Worded as in the published framework, which tests (e.g. with KopfRunner) look for."""
    caplog.set_level(logging.INFO, logger="kopf")
    task, stop_flag, ready_flag = start(make_flag(), registry=registry, settings=settings, vault=vault)
    await asyncio.wait_for(ready_flag.wait(), timeout=10)
    if isinstance(stop_flag, asyncio.Future):
        stop_flag.set_result(value)
    else:
        stop_flag.set()
    await asyncio.wait_for(task, timeout=30)
    assert f"Stop-flag is set to {value!r}. Operator is stopping." in caplog.messages
