"""
Invoking the handlers & callbacks: the kwargs of every kind of cause, sync vs. async, the context.
"""

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import threading
from typing import Any
from unittest.mock import AsyncMock, Mock

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import current
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.diffs import Diff, DiffItem, DiffOperation, diff
from kopf._cogs.structs.ephemera import Memo
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource
from kopf._core.actions.invocation import (
    ActivityCause,
    BaseCause,
    ChangingCause,
    LazyKwargs,
    ResourceCause,
    SpawningCause,
    WatchingCause,
    WebhookCause,
    build_kwargs,
    invoke,
    invoke_sync,
    is_async_fn,
    reduce_to_field,
)

LOGGER = logging.getLogger("tests.invocation")
RESOURCE = Resource("kopf.dev", "v1", "kopfexamples")
RAW = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "kex", "namespace": "ns", "uid": "uid-1", "labels": {"lbl": "x"}, "annotations": {"ann": "y"}},
    "spec": {"field": "value", "items": [1, 2]},
    "status": {"phase": "ok"},
}
OLD = {**RAW, "spec": {"field": "old", "items": [1, 2]}}

probe_var: contextvars.ContextVar[str] = contextvars.ContextVar("probe_var")


def changing_cause(**kwargs: Any) -> ChangingCause:
    body = Body(RAW)
    options: dict[str, Any] = dict(
        logger=LOGGER,
        memo=Memo(x=1),
        indices={"idx": {"key": ["value"]}},
        resource=RESOURCE,
        patch=Patch(),
        body=body,
        reason=kopf.Reason.UPDATE,
        diff=diff(OLD, RAW),
        old=OLD,
        new=RAW,
    )
    options.update(kwargs)
    return ChangingCause(**options)


async def test_changing_kwargs_are_all_documented_ones() -> None:
    cause = changing_cause()
    kwargs = cause.kwargs()
    assert set(kwargs) == {
        "idx",
        "logger",
        "memo",
        "resource",
        "patch",
        "body",
        "spec",
        "meta",
        "status",
        "uid",
        "name",
        "namespace",
        "labels",
        "annotations",
        "reason",
        "diff",
        "old",
        "new",
    }
    assert kwargs["body"] is cause.body
    assert kwargs["patch"] is cause.patch
    assert kwargs["logger"] is LOGGER
    assert kwargs["memo"] == {"x": 1}
    assert kwargs["idx"] == {"key": ["value"]}
    assert kwargs["resource"] == RESOURCE
    assert kwargs["spec"] == {"field": "value", "items": [1, 2]}
    assert kwargs["meta"]["name"] == "kex"
    assert kwargs["status"] == {"phase": "ok"}
    assert (kwargs["uid"], kwargs["name"], kwargs["namespace"]) == ("uid-1", "kex", "ns")
    assert kwargs["labels"] == {"lbl": "x"}
    assert kwargs["annotations"] == {"ann": "y"}
    assert kwargs["reason"] == "update"
    assert kwargs["old"] is OLD and kwargs["new"] is RAW
    assert list(kwargs["diff"]) == [DiffItem(DiffOperation.CHANGE, ("spec", "field"), "old", "value")]


async def test_body_views_are_live() -> None:
    raw: dict[str, Any] = {"spec": {"a": 1}}
    body = Body(raw)
    kwargs = changing_cause(body=body).kwargs()
    raw["spec"]["a"] = 2
    assert kwargs["spec"] == {"a": 2}


async def test_kwargs_are_made_once_per_cause_and_each_caller_gets_its_own_dict() -> None:
    cause = changing_cause()
    calls: list[None] = []
    original = ChangingCause.framework_kwargs

    def counted(self: ChangingCause) -> dict[str, Any]:
        calls.append(None)
        return original(self)

    ChangingCause.framework_kwargs = counted  # type: ignore[method-assign]
    try:
        first = cause.kwargs()
        first["name"] = "changed by a caller"
        second = build_kwargs(cause, retry=1)
        other = changing_cause().kwargs()
    finally:
        ChangingCause.framework_kwargs = original  # type: ignore[method-assign]
    assert second["name"] == "kex" and second["retry"] == 1
    assert other["name"] == "kex"
    assert len(calls) == 2  # once per cause


async def test_lazy_kwargs_are_the_causes_kwargs_made_on_the_first_read() -> None:
    cause = changing_cause()
    lazy = LazyKwargs(cause)
    assert "_made_kwargs" not in vars(cause)

    def fn(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    assert fn(**lazy) == cause.kwargs()
    assert lazy["name"] == "kex" and lazy["idx"] == {"key": ["value"]}
    assert len(lazy) == len(cause.kwargs()) and set(lazy) == set(cause.kwargs())


async def test_the_long_lived_causes_of_daemons_keep_no_kwargs() -> None:
    cause = SpawningCause(logger=LOGGER, resource=RESOURCE, patch=Patch(), body=Body(RAW))
    assert cause.kwargs()["name"] == "kex"
    assert "_made_kwargs" not in vars(cause)
    changing = changing_cause()
    changing.kwargs()
    assert "_made_kwargs" in vars(changing)


async def test_indices_override_the_same_named_framework_kwargs() -> None:
    # As documented and as the published framework does: a kwarg added later never hides an index.
    cause = changing_cause(indices={"name": "an index", "other": "index"})
    assert cause.kwargs()["name"] == "an index"
    assert cause.kwargs()["other"] == "index"
    assert cause.framework_kwargs()["name"] == "kex"
    assert "other" not in cause.framework_kwargs()


async def test_indices_override_the_per_handler_kwargs_too() -> None:
    cause = changing_cause(indices={"retry": "an index", "diff": "another"})
    kwargs = build_kwargs(cause, retry=3, param=None)
    assert kwargs["retry"] == "an index"
    assert kwargs["diff"] == "another"
    assert kwargs["param"] is None and kwargs["name"] == "kex"


async def test_activity_kwargs() -> None:
    settings = OperatorSettings()
    cause = ActivityCause(logger=LOGGER, activity="startup", settings=settings, memo=Memo())
    assert set(cause.kwargs()) == {"logger", "memo", "activity", "settings"}
    assert cause.kwargs()["settings"] is settings


async def test_watching_kwargs() -> None:
    event = {"type": "ADDED", "object": RAW}
    cause = WatchingCause(logger=LOGGER, resource=RESOURCE, patch=Patch(), body=Body(RAW), type="ADDED", event=event)
    kwargs = cause.kwargs()
    assert kwargs["type"] == "ADDED"
    assert kwargs["event"] is event
    assert "reason" not in kwargs and "diff" not in kwargs


async def test_spawning_and_resource_kwargs() -> None:
    cause = SpawningCause(logger=LOGGER, resource=RESOURCE, patch=Patch(), body=Body(RAW))
    plain = ResourceCause(logger=LOGGER, resource=RESOURCE, patch=Patch(), body=Body(RAW))
    assert set(cause.kwargs()) == set(plain.kwargs())


async def test_webhook_kwargs() -> None:
    warnings: list[str] = []
    cause = WebhookCause(
        logger=LOGGER,
        resource=RESOURCE,
        patch=Patch(),
        body=Body(RAW),
        dryrun=True,
        warnings=warnings,
        subresource="status",
        userinfo={"username": "me"},
        headers={"X": "y"},
        operation="CREATE",
    )
    kwargs = cause.kwargs()
    assert kwargs["dryrun"] is True
    assert kwargs["warnings"] is warnings
    assert kwargs["subresource"] == "status"
    assert kwargs["userinfo"] == {"username": "me"}
    assert kwargs["headers"] == {"X": "y"}
    assert kwargs["sslpeer"] == {}  # no client certificate: an empty mapping (falsy, with .get())
    assert kwargs["operation"] == "CREATE"


async def test_build_kwargs_extras_override_the_cause() -> None:
    kwargs = build_kwargs(changing_cause(), param=123, retry=2, name="override")
    assert kwargs["param"] == 123
    assert kwargs["retry"] == 2
    assert kwargs["name"] == "override"
    assert build_kwargs(None, a=1) == {"a": 1}


def test_reduce_to_field() -> None:
    kwargs = changing_cause().kwargs()
    reduced = reduce_to_field(kwargs, "spec.field")
    assert reduced["old"] == "old"
    assert reduced["new"] == "value"
    assert list(reduced["diff"]) == [DiffItem(DiffOperation.CHANGE, (), "old", "value")]
    assert reduced["body"] is kwargs["body"]
    assert reduce_to_field(kwargs, None) == kwargs
    absent = reduce_to_field(kwargs, "spec.nonexistent")
    assert absent["old"] is None and absent["new"] is None and list(absent["diff"]) == []


def test_async_detection() -> None:
    async def afn(**_: Any) -> None: ...

    def sfn(**_: Any) -> None: ...

    class AsyncCallable:
        async def __call__(self, **_: Any) -> None: ...

    class SyncCallable:
        def __call__(self, **_: Any) -> None: ...

    assert is_async_fn(afn)
    assert is_async_fn(functools.partial(afn, x=1))
    assert is_async_fn(functools.partial(functools.partial(afn), x=1))
    assert is_async_fn(AsyncCallable())
    assert is_async_fn(AsyncMock())
    assert not is_async_fn(sfn)
    assert not is_async_fn(functools.partial(sfn, x=1))
    assert not is_async_fn(SyncCallable())
    assert not is_async_fn(Mock())
    assert not is_async_fn(lambda: None)
    assert not is_async_fn(None)


async def test_async_fn_runs_in_the_loop_thread_with_all_kwargs() -> None:
    seen: dict[str, Any] = {}

    async def fn(**kwargs: Any) -> str:
        seen.update(kwargs, thread=threading.get_ident())
        return "result"

    cause = changing_cause()
    result = await invoke(fn, cause=cause, kwargs={"param": "p"})
    assert result == "result"
    assert seen["thread"] == threading.get_ident()
    assert seen["param"] == "p"
    assert seen["body"] is cause.body


async def test_sync_fn_runs_in_a_thread() -> None:
    seen: dict[str, Any] = {}

    def fn(spec: Any, **_: Any) -> int:
        seen.update(thread=threading.get_ident(), spec=dict(spec))
        return 42

    result = await invoke(fn, cause=changing_cause())
    assert result == 42
    assert seen["thread"] != threading.get_ident()
    assert seen["spec"] == RAW["spec"]


async def test_sync_fn_uses_the_executor_of_the_settings() -> None:
    settings = OperatorSettings()
    with concurrent.futures.ThreadPoolExecutor(thread_name_prefix="kopf-test-pool") as executor:
        settings.execution.executor = executor
        name = await invoke(lambda **_: threading.current_thread().name, settings=settings)
    assert name.startswith("kopf-test-pool")


async def test_sync_fn_uses_an_explicit_executor_over_the_settings() -> None:
    settings = OperatorSettings()
    with concurrent.futures.ThreadPoolExecutor(thread_name_prefix="explicit-pool") as executor:
        name = await invoke(lambda **_: threading.current_thread().name, settings=settings, executor=executor)
    assert name.startswith("explicit-pool")


async def test_context_vars_are_visible_in_the_threads_of_sync_fns() -> None:
    token = probe_var.set("from-the-loop")
    try:
        values = await invoke(lambda **_: (probe_var.get(None), current.get_current_body()), cause=changing_cause())
    finally:
        probe_var.reset(token)
    assert values[0] == "from-the-loop"
    assert values[1] is not None and values[1]["metadata"]["name"] == "kex"


async def test_the_object_is_current_during_the_call_only() -> None:
    cause = changing_cause()

    async def fn(**_: Any) -> Any:
        return current.get_current_body()

    assert await invoke(fn, cause=cause) is cause.body
    assert current.get_current_body() is None


async def test_no_current_object_for_activities() -> None:
    cause = ActivityCause(logger=LOGGER, activity="startup", settings=OperatorSettings())
    assert await invoke(lambda **_: current.get_current_body(), cause=cause) is None


async def test_sync_fn_returning_an_awaitable_is_awaited() -> None:
    async def inner() -> str:
        return "awaited"

    assert await invoke(lambda **_: inner()) == "awaited"


async def test_callable_objects_and_partials() -> None:
    class AsyncCallable:
        async def __call__(self, *, extra: int, **_: Any) -> int:
            return extra * 2

    async def afn(factor: int, *, extra: int, **_: Any) -> int:
        return factor * extra

    assert await invoke(AsyncCallable(), kwargs={"extra": 5}) == 10
    assert await invoke(functools.partial(afn, 3), kwargs={"extra": 5}) == 15


async def test_errors_are_propagated_as_is() -> None:
    async def afn(**_: Any) -> None:
        raise kopf.TemporaryError("async boom", delay=3)

    def sfn(**_: Any) -> None:
        raise ValueError("sync boom")

    with pytest.raises(kopf.TemporaryError, match="async boom"):
        await invoke(afn)
    with pytest.raises(ValueError, match="sync boom"):
        await invoke(sfn)


async def test_mocks_are_invoked_with_the_kwargs() -> None:
    amock = AsyncMock(return_value=1)
    smock = Mock(return_value=2)
    cause = BaseCause(logger=LOGGER)
    assert await invoke(amock, cause=cause, kwargs={"x": 1}) == 1
    assert await invoke(smock, cause=cause, kwargs={"x": 2}) == 2
    amock.assert_awaited_once_with(logger=LOGGER, memo=None, x=1)
    smock.assert_called_once_with(logger=LOGGER, memo=None, x=2)


async def test_invoke_sync_in_place() -> None:
    cause = changing_cause()
    assert invoke_sync(lambda name, **_: (name, threading.get_ident(), current.get_current_body()), cause=cause) == (
        "kex",
        threading.get_ident(),
        cause.body,
    )

    async def afn(**_: Any) -> None: ...

    with pytest.raises(TypeError, match="Async"):
        invoke_sync(afn)


async def test_cancellation_of_an_async_fn_propagates() -> None:
    started = asyncio.Event()

    async def fn(**_: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(invoke(fn))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_diff_kwarg_type() -> None:
    assert isinstance(changing_cause().kwargs()["diff"], Diff)
    assert isinstance(
        ChangingCause(logger=LOGGER, resource=RESOURCE, patch=Patch(), body=Body({}), reason="create").kwargs()["diff"],
        Diff,
    )
