"""
Executing the handlers in handling cycles: outcomes, errors, retries, delays, persisted progress,
results, sub-handlers, and multi-cycle simulations in virtual time (the body updated by the patches).
"""

import asyncio
import copy
import datetime
import functools
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

import kopf
from kopf._cogs.aiokits.clock import utcnow
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)
from kopf._cogs.structs import current, dicts
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.diffs import diff
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource
from kopf._core.actions import lifecycles
from kopf._core.actions.application import build_touch_patch, get_delay, get_remaining_delay, touch
from kopf._core.actions.execution import (
    Execution,
    HandlerChildrenRetry,
    HandlerOutcome,
    HandlerState,
    State,
    deliver_results,
    execute,
    execute_handler_once,
    execute_handlers_once,
    run_handlers,
)
from kopf._core.actions.invocation import ActivityCause, ChangingCause
from kopf._core.intents import filters, subhandlers
from kopf._core.intents.causes import Reason
from kopf._core.intents.handlers import ChangingHandler
from kopf._core.intents.registries import ChangingRegistry, OperatorRegistry
from kopf._core.intents.subexecution import SUBHANDLING

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime

LOGGER = logging.getLogger("tests.execution")
RESOURCE = Resource("kopf.dev", "v1", "kopfexamples")
BODY: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "kex", "namespace": "ns", "uid": "uid-1", "labels": {"app": "demo"}},
    "spec": {"field": "value", "items": ["item1", "item2"]},
}

STORAGES: dict[str, Callable[[], ProgressStorage]] = {
    "annotations": AnnotationsProgressStorage,
    "status": StatusProgressStorage,
    "smart": SmartProgressStorage,
}


@pytest.fixture(params=list(STORAGES))
def settings(request: pytest.FixtureRequest) -> OperatorSettings:
    settings = OperatorSettings()
    settings.persistence.progress_storage = STORAGES[request.param]()
    return settings


@pytest.fixture(autouse=True)
def _default_lifecycle() -> Any:
    yield
    lifecycles.set_default_lifecycle(None)


def make_handler(
    fn: Callable[..., Any],
    id: str | None = None,
    *,
    param: Any = None,
    errors: kopf.ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    field: str | None = None,
    labels: Any = None,
    reason: Reason | None = Reason.CREATE,
) -> ChangingHandler:
    return ChangingHandler(
        fn=fn,
        id=HandlerId(id or fn.__name__),
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        selector=None,
        labels=filters.normalize_meta_filter(labels, what="labels"),
        annotations=None,
        when=None,
        field=dicts.parse_field(field) if field else None,
        value=None,
        reason=reason,
    )


def merge(body: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """The test's own JSON merge-patch (RFC 7386), as the API server would apply it."""
    result = copy.deepcopy(dict(body))
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            result[key] = merge(result[key] if isinstance(result.get(key), Mapping) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def make_cause(
    body: Mapping[str, Any],
    patch: Patch | None = None,
    *,
    reason: str = Reason.CREATE,
    old: Any = None,
    new: Any = None,
) -> ChangingCause:
    return ChangingCause(
        logger=LOGGER,
        resource=RESOURCE,
        patch=patch if patch is not None else Patch(),
        body=Body(body),
        reason=reason,
        old=old,
        new=new,
        diff=diff(old, new),
    )


def progress(body: Mapping[str, Any]) -> dict[str, Any]:
    """All the progress records on the object, wherever they are stored."""
    annotations = body.get("metadata", {}).get("annotations", {})
    found = {
        key: json.loads(value)
        for key, value in annotations.items()
        if key.startswith("kopf.zalando.org/") and not key.endswith("touch-dummy")
    }
    found.update(dicts.resolve(body, ("status", "kopf", "progress"), {}))
    return found


async def cycle(
    handlers: Sequence[ChangingHandler],
    body: Mapping[str, Any],
    settings: OperatorSettings,
    **kwargs: Any,
) -> tuple[dict[str, Any], Patch, Execution]:
    patch = Patch()
    cause = make_cause(body, patch, reason=kwargs.pop("reason", Reason.CREATE))
    execution = await execute_handlers_once(
        handlers=handlers, cause=cause, settings=settings, subhandling=SUBHANDLING, **kwargs
    )
    return merge(body, patch), patch, execution


async def simulate(
    handlers: Sequence[ChangingHandler],
    settings: OperatorSettings,
    body: Mapping[str, Any] = BODY,
    *,
    max_cycles: int = 100,
    **kwargs: Any,
) -> tuple[dict[str, Any], list[Execution]]:
    """Run the cycles until done, applying the patches and sleeping the delays (in virtual time)."""
    executions: list[Execution] = []
    current_body = dict(body)
    for _ in range(max_cycles):
        current_body, _, execution = await cycle(handlers, current_body, settings, **kwargs)
        executions.append(execution)
        if execution.done:
            assert execution.delay is None
            return current_body, executions
        assert execution.delay is not None
        await asyncio.sleep(execution.delay)
    raise AssertionError(f"The handling has not finished in {max_cycles} cycles.")


class Calls:
    """A recorder of the calls: the handler ids, the loop times, and the kwargs."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop  # also for the sync handlers in their threads, where there is no running loop.
        self.log: list[tuple[str, float, dict[str, Any]]] = []

    def __call__(self, id: str, kwargs: dict[str, Any]) -> None:
        self.log.append((id, self.loop.time(), kwargs))

    def ids(self) -> list[str]:
        return [id for id, _, _ in self.log]

    def times(self, id: str) -> list[float]:
        return [round(time, 3) for i, time, _ in self.log if i == id]

    def kwargs(self, id: str) -> list[dict[str, Any]]:
        return [kwargs for i, _, kwargs in self.log if i == id]


@pytest.fixture
async def calls() -> Calls:
    return Calls(asyncio.get_running_loop())


# Single cycles: results, records, purging.


async def test_a_sync_handler_succeeds_and_its_result_goes_to_the_status(settings: OperatorSettings) -> None:
    def fn(**_: Any) -> int:
        return 100

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert execution.done
    assert execution.delay is None
    assert execution.outcomes == {"fn": HandlerOutcome(final=True, result=100)}
    assert body["status"]["fn"] == 100
    assert progress(body) == {}  # finished in one cycle: no records are written at all.


async def test_a_finished_cycle_writes_no_records_and_removes_the_earlier_ones(settings: OperatorSettings) -> None:
    stored: list[str] = []
    storage = settings.persistence.progress_storage
    original_store = storage.store

    def spy(**kwargs: Any) -> None:
        stored.append(kwargs["key"])
        original_store(**kwargs)

    storage.store = spy  # type: ignore[method-assign]
    attempts: list[None] = []

    def fn(**_: Any) -> int:
        attempts.append(None)
        if len(attempts) == 1:
            raise kopf.TemporaryError("not yet", delay=0)
        return 100

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert not execution.done and stored == ["fn"] and len(progress(body)) == 1
    body, _, execution = await cycle([make_handler(fn)], body, settings)
    assert execution.done and stored == ["fn"]  # not written only to be purged in the same patch
    assert progress(body) == {} and body["status"]["fn"] == 100


@pytest.mark.parametrize("result", [{"r1": 66, "r2": 666}, "a string", 0, False, [1, 2]])
async def test_results_are_stored_as_they_are(settings: OperatorSettings, result: Any) -> None:
    async def fn(**_: Any) -> Any:
        return result

    body, _, _ = await cycle([make_handler(fn)], BODY, settings)
    assert body["status"]["fn"] == result


async def test_none_results_store_nothing(settings: OperatorSettings) -> None:
    async def fn(**_: Any) -> None:
        return None

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert execution.done
    assert "fn" not in body.get("status", {})


async def test_no_handlers_is_done_at_once(settings: OperatorSettings) -> None:
    _, patch, execution = await cycle([], BODY, settings)
    assert execution.done
    assert execution.outcomes == {}
    assert patch == {}


async def test_one_handler_per_cycle_by_default(settings: OperatorSettings, calls: Calls) -> None:
    async def fn1(**kwargs: Any) -> str:
        calls("fn1", kwargs)
        return "one"

    async def fn2(**kwargs: Any) -> str:
        calls("fn2", kwargs)
        return "two"

    handlers = [make_handler(fn1), make_handler(fn2)]
    body, _, execution = await cycle(handlers, BODY, settings)
    assert calls.ids() == ["fn1"]
    assert not execution.done
    assert execution.delay == 0
    assert body["status"]["fn1"] == "one"
    records = progress(body)
    # The executed handler is done; the pending one is recorded as started (its runtime counts from now).
    assert set(records) <= {"kopf.zalando.org/fn1", "fn1", "kopf.zalando.org/fn2", "fn2"}
    for key, record in records.items():
        assert record["success"] is key.endswith("fn1")
        assert record["retries"] == (1 if key.endswith("fn1") else 0)
        assert record["purpose"] == "create"

    body, _, execution = await cycle(handlers, body, settings)
    assert calls.ids() == ["fn1", "fn2"]
    assert execution.done
    assert (body["status"]["fn1"], body["status"]["fn2"]) == ("one", "two")
    assert progress(body) == {}


async def test_all_at_once_lifecycle(settings: OperatorSettings, calls: Calls) -> None:
    handlers = [make_handler(lambda **kw: calls("a", kw), id="a"), make_handler(lambda **kw: calls("b", kw), id="b")]
    _, _, execution = await cycle(handlers, BODY, settings, lifecycle=lifecycles.all_at_once)
    assert calls.ids() == ["a", "b"]
    assert execution.done


async def test_default_lifecycle_can_be_changed(settings: OperatorSettings, calls: Calls) -> None:
    lifecycles.set_default_lifecycle(lifecycles.all_at_once)
    handlers = [make_handler(lambda **kw: calls("a", kw), id="a"), make_handler(lambda **kw: calls("b", kw), id="b")]
    _, _, execution = await cycle(handlers, BODY, settings)
    assert calls.ids() == ["a", "b"]
    assert execution.done


async def test_finished_handlers_are_not_executed_again(settings: OperatorSettings, calls: Calls) -> None:
    """Continuity: an operator restarted in the middle of a cycle continues where it stopped."""

    async def fn1(**kwargs: Any) -> None:
        calls("fn1", kwargs)

    async def fn2(**kwargs: Any) -> None:
        calls("fn2", kwargs)

    handlers = [make_handler(fn1), make_handler(fn2)]
    body, _, _ = await cycle(handlers, BODY, settings)
    body, _, _ = await cycle(handlers, body, settings, reason=Reason.CREATE)
    assert calls.ids() == ["fn1", "fn2"]


async def test_records_of_another_purpose_are_ignored(settings: OperatorSettings, calls: Calls) -> None:
    async def fn(**kwargs: Any) -> None:
        calls("fn", kwargs)

    async def other(**kwargs: Any) -> None:
        calls("other", kwargs)

    body, _, _ = await cycle([make_handler(fn), make_handler(other)], BODY, settings)
    assert calls.ids() == ["fn"]
    body, _, execution = await cycle([make_handler(fn, reason=Reason.DELETE)], body, settings, reason=Reason.DELETE)
    assert calls.ids() == ["fn", "fn"]
    assert execution.done


async def test_the_progress_records_in_the_annotations(calls: Calls) -> None:
    settings = OperatorSettings()
    settings.persistence.progress_storage = AnnotationsProgressStorage()

    async def fn(**_: Any) -> None:
        raise kopf.TemporaryError("not yet", delay=30)

    _, patch, execution = await cycle([make_handler(fn)], BODY, settings)
    record = json.loads(patch["metadata"]["annotations"]["kopf.zalando.org/fn"])
    assert set(record) == {"started", "delayed", "purpose", "retries", "success", "failure", "message"}
    assert record["retries"] == 1
    assert record["success"] is False and record["failure"] is False
    assert record["message"] == "not yet"
    assert record["purpose"] == "create"
    started = datetime.datetime.fromisoformat(record["started"])
    delayed = datetime.datetime.fromisoformat(record["delayed"])
    assert (delayed - started).total_seconds() == pytest.approx(30, abs=0.1)
    assert execution.delay == pytest.approx(30, abs=0.1)


async def test_the_progress_records_in_the_status() -> None:
    settings = OperatorSettings()
    settings.persistence.progress_storage = StatusProgressStorage(field="status.my-op")

    async def fn(**_: Any) -> None:
        raise kopf.PermanentError("never")

    async def fn2(**_: Any) -> None:
        pass

    body, patch, execution = await cycle([make_handler(fn), make_handler(fn2)], BODY, settings)
    record = patch["status"]["my-op"]["fn"]
    assert record["failure"] is True
    assert record["success"] is False
    assert record["message"] == "never"
    assert record["stopped"] is not None
    assert record["delayed"] is None  # kept as None in the status: it removes the stale values.
    assert "metadata" not in patch

    body, patch, execution = await cycle([make_handler(fn), make_handler(fn2)], body, settings)
    assert execution.done
    assert patch["status"]["my-op"]["fn"] is None  # purged.
    assert body["status"]["my-op"] == {}


async def test_failed_handlers_count_as_finished(settings: OperatorSettings) -> None:
    async def fn(**_: Any) -> None:
        raise kopf.PermanentError("never")

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert execution.done
    assert execution.state.failed == ["fn"]
    assert execution.state.succeeded == []
    assert progress(body) == {}


# Errors & retries: the outcomes.


async def run_once(
    handler: ChangingHandler, state: HandlerState | None = None, body: Mapping[str, Any] = BODY
) -> HandlerOutcome:
    return await execute_handler_once(
        handler=handler,
        state=state or HandlerState.from_scratch(purpose="create"),
        cause=make_cause(body),
        settings=OperatorSettings(),
        subhandling=SUBHANDLING,
    )


async def test_temporary_error_with_delay() -> None:
    async def fn(**_: Any) -> None:
        raise kopf.TemporaryError("later", delay=123)

    outcome = await run_once(make_handler(fn))
    assert not outcome.final
    assert outcome.delay == 123
    assert isinstance(outcome.exception, kopf.TemporaryError)


async def test_temporary_error_without_delay() -> None:
    async def fn(**_: Any) -> None:
        raise kopf.TemporaryError("now", delay=None)

    outcome = await run_once(make_handler(fn))
    assert not outcome.final
    assert outcome.delay is None


async def test_temporary_error_with_the_default_delay() -> None:
    async def fn(**_: Any) -> None:
        raise kopf.TemporaryError("default")

    outcome = await run_once(make_handler(fn))
    assert outcome.delay == 60


async def test_permanent_error() -> None:
    async def fn(**_: Any) -> None:
        raise kopf.PermanentError("fatal")

    outcome = await run_once(make_handler(fn))
    assert outcome.final
    assert isinstance(outcome.exception, kopf.PermanentError)


@pytest.mark.parametrize(
    ("errors", "backoff", "final", "delay"),
    [
        (None, None, False, 60),
        (kopf.ErrorsMode.TEMPORARY, None, False, 60),
        (kopf.ErrorsMode.TEMPORARY, 30, False, 30),
        (None, 5.5, False, 5.5),
        (kopf.ErrorsMode.PERMANENT, 30, True, None),
    ],
)
async def test_arbitrary_errors_by_the_errors_mode(
    errors: kopf.ErrorsMode | None, backoff: float | None, final: bool, delay: float | None
) -> None:
    def fn(**_: Any) -> None:
        raise ValueError("boom")

    outcome = await run_once(make_handler(fn, errors=errors, backoff=backoff))
    assert outcome.final == final
    assert outcome.delay == delay
    assert isinstance(outcome.exception, ValueError)


async def test_arbitrary_errors_ignored(settings: OperatorSettings) -> None:
    def fn(**_: Any) -> None:
        raise ValueError("boom")

    outcome = await run_once(make_handler(fn, errors=kopf.ErrorsMode.IGNORED))
    assert outcome == HandlerOutcome(final=True)

    body, _, execution = await cycle([make_handler(fn, errors=kopf.ErrorsMode.IGNORED)], BODY, settings)
    assert execution.done
    assert execution.state.succeeded == ["fn"]
    assert "fn" not in body.get("status", {})


async def test_cancellation_is_not_an_outcome() -> None:
    async def fn(**_: Any) -> None:
        raise asyncio.CancelledError()

    with pytest.raises(asyncio.CancelledError):
        await run_once(make_handler(fn))


async def test_errors_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="tests.execution")

    async def ok(**_: Any) -> None: ...

    async def temp(**_: Any) -> None:
        raise kopf.TemporaryError("temp-msg", delay=1)

    async def perm(**_: Any) -> None:
        raise kopf.PermanentError("perm-msg")

    async def arbitrary(**_: Any) -> None:
        raise ValueError("arbitrary-msg")

    for fn in [ok, temp, perm, arbitrary]:
        await run_once(make_handler(fn))
    messages = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert (logging.DEBUG, "Handler 'ok' is invoked.") in messages
    assert (logging.INFO, "Handler 'ok' succeeded.") in messages
    assert (logging.ERROR, "Handler 'temp' failed temporarily: temp-msg") in messages
    assert (logging.ERROR, "Handler 'perm' failed permanently: perm-msg") in messages
    assert (
        logging.ERROR,
        "Handler 'arbitrary' failed with an exception and will try again in 60 seconds: arbitrary-msg",
    ) in messages
    assert any(record.exc_info for record in caplog.records if "arbitrary" in record.getMessage())


async def test_errors_without_messages(caplog: pytest.LogCaptureFixture) -> None:
    """As published: the logs name them by their repr (``KeyError()``); the records keep the empty message."""

    async def arbitrary(**_: Any) -> None:
        raise KeyError()

    async def perm(**_: Any) -> None:
        raise kopf.PermanentError()

    async def temp(**_: Any) -> None:
        raise kopf.TemporaryError("", delay=1)

    outcomes = {fn.__name__: await run_once(make_handler(fn)) for fn in [arbitrary, perm, temp]}
    messages = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert messages == [
        "Handler 'arbitrary' failed with an exception and will try again in 60 seconds: KeyError()",
        "Handler 'perm' failed permanently: PermanentError()",
        "Handler 'temp' failed temporarily: TemporaryError('')",
    ]
    states = {name: HandlerState.from_scratch().with_outcome(outcome) for name, outcome in outcomes.items()}
    assert [state.as_record()["message"] for state in states.values()] == ["", "", ""]


async def test_retries_limit_before_the_call() -> None:
    fn_calls: list[int] = []

    def fn(retry: int, **_: Any) -> None:
        fn_calls.append(retry)

    state = HandlerState.from_scratch(purpose="create")
    state = HandlerState(started=state.started, purpose="create", retries=3)
    outcome = await run_once(make_handler(fn, retries=3), state=state)
    assert outcome.final
    assert isinstance(outcome.exception, kopf.HandlerRetriesError)
    assert fn_calls == []


async def test_the_last_allowed_attempt_fails_at_once() -> None:
    def fn(**_: Any) -> None:
        raise ValueError("boom")

    state = HandlerState(started=utcnow(), purpose="create", retries=2)
    outcome = await run_once(make_handler(fn, retries=3), state=state)
    assert outcome.final
    assert isinstance(outcome.exception, kopf.HandlerRetriesError)
    assert isinstance(outcome.exception.__cause__, ValueError)
    assert "boom" in str(outcome.exception)


async def test_timeout_before_the_call() -> None:
    fn_calls: list[int] = []

    def fn(retry: int, **_: Any) -> None:
        fn_calls.append(retry)

    state = HandlerState(started=utcnow() - datetime.timedelta(seconds=100), purpose="create", retries=1)
    outcome = await run_once(make_handler(fn, timeout=99), state=state)
    assert outcome.final
    assert isinstance(outcome.exception, kopf.HandlerTimeoutError)
    assert fn_calls == []


async def test_a_running_async_handler_is_not_cancelled_at_its_timeout() -> None:
    """As in the published framework: the timeout is judged between the attempts, the running one finishes."""
    cancelled = asyncio.Event()

    async def fn(**_: Any) -> str:
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "done"

    loop = asyncio.get_running_loop()
    start = loop.time()
    state = HandlerState(started=utcnow() - datetime.timedelta(seconds=4), purpose="create")
    outcome = await run_once(make_handler(fn, timeout=10), state=state)
    assert outcome == HandlerOutcome(final=True, result="done")
    assert not cancelled.is_set()
    assert loop.time() - start == pytest.approx(100)


async def test_an_async_handler_failing_beyond_its_timeout_is_not_retried(
    settings: OperatorSettings, calls: Calls
) -> None:
    async def fn(**kwargs: Any) -> None:
        calls("fn", kwargs)
        await asyncio.sleep(5)
        raise ValueError("too late")

    _, executions = await simulate([make_handler(fn, timeout=3, backoff=1)], settings)
    assert calls.times("fn") == [0]
    assert isinstance(executions[-1].outcomes["fn"].exception, kopf.HandlerTimeoutError)
    assert asyncio.get_running_loop().time() == pytest.approx(5)


async def test_handlers_own_timeout_errors_are_regular_errors() -> None:
    async def fn(**_: Any) -> None:
        async with asyncio.timeout(1):
            await asyncio.sleep(10)

    outcome = await run_once(make_handler(fn, timeout=100))
    assert not outcome.final
    assert isinstance(outcome.exception, TimeoutError)
    assert not isinstance(outcome.exception, kopf.HandlerTimeoutError)


# The kwargs of the handlers.


async def test_retrying_kwargs_across_cycles(settings: OperatorSettings, calls: Calls) -> None:
    async def fn(retry: int, **kwargs: Any) -> None:
        calls("fn", kwargs)
        if retry < 2:
            raise kopf.TemporaryError("again", delay=10)

    _, _ = await simulate([make_handler(fn, param={"p": 1})], settings)
    kwargs = calls.kwargs("fn")
    assert len(kwargs) == 3
    assert [kw["param"] for kw in kwargs] == [{"p": 1}] * 3
    assert len({kw["started"] for kw in kwargs}) == 1
    assert isinstance(kwargs[0]["started"], datetime.datetime)
    assert [kw["runtime"].total_seconds() for kw in kwargs] == pytest.approx([0, 10, 20], abs=0.01)
    assert calls.times("fn") == [0, 10, 20]


async def test_all_kwargs_of_the_change_detecting_handlers() -> None:
    seen: dict[str, Any] = {}

    async def fn(**kwargs: Any) -> None:
        seen.update(kwargs)

    old = {**BODY, "spec": {"field": "old"}}
    cause = make_cause(BODY, old=old, new=BODY, reason=Reason.UPDATE)
    await execute_handler_once(
        handler=make_handler(fn, param="x"), state=HandlerState.from_scratch(), cause=cause, settings=OperatorSettings()
    )
    assert set(seen) == {
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
        "param",
        "retry",
        "started",
        "runtime",
    }
    assert seen["body"] is cause.body
    assert seen["patch"] is cause.patch
    assert seen["reason"] == "update"
    assert seen["old"] is old and seen["new"] is BODY
    assert seen["retry"] == 0


async def test_field_handlers_get_the_field_values() -> None:
    seen: list[tuple[Any, Any, Any, Any]] = []

    async def fn(old: Any, new: Any, diff: Any, param: Any, **_: Any) -> None:
        seen.append((old, new, list(diff), param))

    old = {**BODY, "spec": {"field": "old"}}
    cause = make_cause(BODY, old=old, new=BODY, reason=Reason.UPDATE)
    for handler in [
        make_handler(fn, id="fn/spec.field", field="spec.field", param=10),
        make_handler(fn, id="fn/spec", field="spec", param=1),
    ]:
        await execute_handler_once(
            handler=handler, state=HandlerState.from_scratch(), cause=cause, settings=OperatorSettings()
        )
    assert seen[0] == ("old", "value", [("change", (), "old", "value")], 10)
    assert seen[1][0] == {"field": "old"}
    assert seen[1][1] == BODY["spec"]
    assert seen[1][3] == 1


async def test_the_object_is_current_in_sync_and_async_handlers(settings: OperatorSettings) -> None:
    seen: list[Any] = []

    def sfn(**_: Any) -> None:
        seen.append((threading.get_ident(), current.get_current_body()))

    async def afn(**_: Any) -> None:
        seen.append((threading.get_ident(), current.get_current_body()))

    await cycle([make_handler(sfn), make_handler(afn)], BODY, settings, lifecycle=lifecycles.all_at_once)
    assert seen[0][0] != threading.get_ident()
    assert seen[1][0] == threading.get_ident()
    assert all(body is not None and body["metadata"]["name"] == "kex" for _, body in seen)
    assert current.get_current_body() is None


async def test_sync_handlers_use_the_executor_of_the_settings(settings: OperatorSettings) -> None:
    import concurrent.futures

    names: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(thread_name_prefix="handlers-pool") as executor:
        settings.execution.executor = executor
        await cycle([make_handler(lambda **_: names.append(threading.current_thread().name), id="fn")], BODY, settings)
    assert names[0].startswith("handlers-pool")


async def test_handlers_can_patch_the_object(settings: OperatorSettings) -> None:
    def fn(patch: Patch, **_: Any) -> None:
        patch.metadata.labels["handled"] = "yes"
        patch.status["custom"] = {"x": 1}

    body, _, _ = await cycle([make_handler(fn)], BODY, settings)
    assert body["metadata"]["labels"] == {"app": "demo", "handled": "yes"}
    assert body["status"]["custom"] == {"x": 1}


# Multi-cycle simulations in virtual time.


async def test_simulation_with_retries_delays_and_failures(settings: OperatorSettings, calls: Calls) -> None:
    async def create_pvc(**kwargs: Any) -> dict[str, str]:
        calls("create_pvc", kwargs)
        return {"name": "pvc-1"}

    async def create_job(status: Mapping[str, Any], **kwargs: Any) -> dict[str, str]:
        calls("create_job", kwargs)
        if not status.get("create_pvc"):
            raise kopf.TemporaryError("PVC is not created yet.", delay=10)
        return {"name": "job-for-" + status["create_pvc"]["name"]}

    def flaky(retry: int, **kwargs: Any) -> None:
        calls("flaky", kwargs)
        if retry < 2:
            raise ValueError("environment is not ready")

    def fatal(**kwargs: Any) -> None:
        calls("fatal", kwargs)
        raise kopf.PermanentError("cannot do it")

    handlers = [
        make_handler(create_job),
        make_handler(create_pvc),
        make_handler(flaky, backoff=30),
        make_handler(fatal),
    ]
    body, executions = await simulate(handlers, settings)

    assert calls.times("create_job") == [0, 10]
    assert calls.times("create_pvc") == [0]
    assert calls.times("flaky") == [0, 30, 60]
    assert calls.times("fatal") == [0]
    assert asyncio.get_running_loop().time() == pytest.approx(60)
    assert body["status"]["create_pvc"] == {"name": "pvc-1"}
    assert body["status"]["create_job"] == {"name": "job-for-pvc-1"}
    assert "flaky" not in body["status"] and "fatal" not in body["status"]
    assert progress(body) == {}
    assert executions[-1].state.failed == ["fatal"]
    assert sorted(executions[-1].state.succeeded) == ["create_job", "create_pvc", "flaky"]


async def test_simulation_of_exhausted_retries(settings: OperatorSettings, calls: Calls) -> None:
    def fn(**kwargs: Any) -> None:
        calls("fn", kwargs)
        raise ValueError("boom")

    body, executions = await simulate([make_handler(fn, retries=3, backoff=5)], settings)
    assert calls.times("fn") == [0, 5, 10]
    assert isinstance(executions[-1].outcomes["fn"].exception, kopf.HandlerRetriesError)
    assert executions[-1].state["fn"].failure
    assert executions[-1].state["fn"].retries == 3
    assert progress(body) == {}


async def test_simulation_of_an_exceeded_timeout(settings: OperatorSettings, calls: Calls) -> None:
    def fn(**kwargs: Any) -> None:
        calls("fn", kwargs)
        raise kopf.TemporaryError("later", delay=60)

    _, executions = await simulate([make_handler(fn, timeout=100)], settings)
    assert calls.times("fn") == [0, 60]
    assert isinstance(executions[-1].outcomes["fn"].exception, kopf.HandlerTimeoutError)
    assert asyncio.get_running_loop().time() == pytest.approx(60)  # no waiting for a retry beyond the timeout


async def test_simulation_of_immediate_retries(settings: OperatorSettings, calls: Calls) -> None:
    async def fn(retry: int, **kwargs: Any) -> None:
        calls("fn", kwargs)
        if retry < 4:
            raise kopf.TemporaryError("again", delay=None)

    _, executions = await simulate([make_handler(fn)], settings)
    assert calls.times("fn") == [0, 0, 0, 0, 0]
    assert len(executions) == 5


async def test_simulation_asap_runs_the_fresh_handlers_before_the_retried_ones(
    settings: OperatorSettings, calls: Calls
) -> None:
    async def fn1(retry: int, **kwargs: Any) -> None:
        calls("fn1", kwargs)
        if retry < 1:
            raise kopf.TemporaryError("again", delay=None)

    async def fn2(**kwargs: Any) -> None:
        calls("fn2", kwargs)

    await simulate([make_handler(fn1), make_handler(fn2)], settings)
    assert calls.ids() == ["fn1", "fn2", "fn1"]


async def test_simulation_one_by_one_keeps_the_order(settings: OperatorSettings, calls: Calls) -> None:
    async def fn1(retry: int, **kwargs: Any) -> None:
        calls("fn1", kwargs)
        if retry < 1:
            raise kopf.TemporaryError("again", delay=None)

    async def fn2(**kwargs: Any) -> None:
        calls("fn2", kwargs)

    await simulate([make_handler(fn1), make_handler(fn2)], settings, lifecycle=lifecycles.one_by_one)
    assert calls.ids() == ["fn1", "fn1", "fn2"]


# Sub-handlers.


@pytest.mark.parametrize(("lifecycle", "entries"), [(lifecycles.asap, 10), (lifecycles.all_at_once, 7)])
async def test_idempotence_example(
    settings: OperatorSettings, calls: Calls, lifecycle: lifecycles.LifeCycleFn, entries: int
) -> None:
    async def create_a(retry: int, **kwargs: Any) -> None:
        calls("a", kwargs)
        if retry < 2:
            raise kopf.TemporaryError("Not ready yet.", delay=10)

    async def create_b(retry: int, **kwargs: Any) -> None:
        calls("b", kwargs)
        if retry < 6:
            raise kopf.TemporaryError("Not ready yet.", delay=10)

    async def create(**kwargs: Any) -> None:
        calls("entering", kwargs)
        await execute(fns={"a": create_a, "b": create_b})
        calls("leaving", kwargs)

    body, executions = await simulate([make_handler(create)], settings, lifecycle=lifecycle)
    assert len(calls.times("entering")) == entries
    assert calls.times("leaving") == [60]
    assert len(calls.times("a")) == 3 and calls.times("a")[-1] == 20
    assert len(calls.times("b")) == 7 and calls.times("b")[-1] == 60
    assert executions[-1].state.succeeded == ["create"]
    assert executions[-1].state["create"].subrefs == ("create/a", "create/b")
    assert progress(body) == {}  # incl. the sub-handlers' records.


async def test_subhandlers_via_the_decorator_in_a_sync_parent(settings: OperatorSettings, calls: Calls) -> None:
    def create_fn(spec: Mapping[str, Any], **kwargs: Any) -> str:
        calls("parent", kwargs)
        for item in spec.get("items", []):

            @kopf.subhandler(id=item)
            def handle_item(item: str = item, **kwargs: Any) -> str:
                calls(item, kwargs)
                if kwargs["retry"] < 1:
                    raise kopf.TemporaryError("again", delay=5)
                return f"done-{item}"

        return "parent result"

    body, _ = await simulate([make_handler(create_fn)], settings, lifecycle=lifecycles.all_at_once)
    assert calls.times("item1") == [0, 5]
    assert calls.times("item2") == [0, 5]
    assert calls.times("parent") == [0, 5]
    assert body["status"]["create_fn/item1"] == "done-item1"
    assert body["status"]["create_fn/item2"] == "done-item2"
    # The parent's result is only from its last call, when its sub-handlers are all done.
    assert body["status"]["create_fn"] == "parent result"
    assert progress(body) == {}


async def test_subhandlers_via_register(settings: OperatorSettings, calls: Calls) -> None:
    async def create_it(spec: Mapping[str, Any], **kwargs: Any) -> None:
        calls("parent", kwargs)
        for task in spec.get("items", []):
            kopf.register(id=task, fn=functools.partial(record_task, task=task))

    async def record_task(task: str, **kwargs: Any) -> None:
        calls(task, kwargs)

    body, executions = await simulate([make_handler(create_it)], settings)
    assert calls.ids() == ["parent", "item1", "parent", "item2"]
    assert executions[-1].state["create_it"].subrefs == ("create_it/item1", "create_it/item2")
    assert progress(body) == {}


async def test_subhandlers_get_their_own_kwargs(settings: OperatorSettings) -> None:
    seen: dict[str, Any] = {}

    async def parent(**_: Any) -> None:
        @kopf.subhandler(id="child", param="child-param")
        async def child(**kwargs: Any) -> None:
            seen.update(kwargs)

    await simulate([make_handler(parent, param="parent-param")], settings, lifecycle=lifecycles.all_at_once)
    assert seen["param"] == "child-param"
    assert seen["retry"] == 0
    assert seen["body"]["metadata"]["name"] == "kex"


async def test_nested_subhandlers(settings: OperatorSettings, calls: Calls) -> None:
    async def parent(**_: Any) -> None:
        @kopf.subhandler(id="child")
        async def child(**_: Any) -> None:
            @kopf.subhandler(id="grandchild")
            async def grandchild(**kwargs: Any) -> str:
                calls("grandchild", kwargs)
                return "deep"

    body, executions = await simulate([make_handler(parent)], settings, lifecycle=lifecycles.all_at_once)
    assert len(executions) == 1
    assert calls.ids() == ["grandchild"]
    assert body["status"]["parent/child/grandchild"] == "deep"
    assert progress(body) == {}


async def test_nested_subhandlers_purged_across_cycles(settings: OperatorSettings) -> None:
    async def parent(**_: Any) -> None:
        for child_id in ["child1", "child2"]:

            @kopf.subhandler(id=child_id)
            async def child(**_: Any) -> None:
                @kopf.subhandler(id="grandchild")
                async def grandchild(**_: Any) -> str:
                    return "deep"

    body, _, execution = await cycle([make_handler(parent)], BODY, settings)
    assert not execution.done  # one child (with its grandchild) per cycle.
    # parent, child1 & its grandchild, and the pending child2 (recorded as started); smart: annotations only.
    assert len(progress(body)) == 4
    body, _, execution = await cycle([make_handler(parent)], body, settings)
    assert execution.done
    assert body["status"]["parent/child1/grandchild"] == "deep"
    assert body["status"]["parent/child2/grandchild"] == "deep"
    assert progress(body) == {}


async def test_execute_with_a_list_of_fns(settings: OperatorSettings, calls: Calls) -> None:
    async def first(**kwargs: Any) -> None:
        calls("first", kwargs)

    async def second(**kwargs: Any) -> None:
        calls("second", kwargs)

    async def parent(**_: Any) -> None:
        await execute(fns=[first, second], lifecycle=lifecycles.all_at_once)

    _, executions = await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["first", "second"]
    assert len(executions) == 1
    assert executions[-1].state["parent"].subrefs == ("parent/first", "parent/second")


async def test_execute_with_handlers_and_registry(settings: OperatorSettings, calls: Calls) -> None:
    registry = OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    async def from_registry(**kwargs: Any) -> None:
        calls("from_registry", kwargs)

    @kopf.on.update("kopfexamples", registry=registry)
    async def not_for_creation(**kwargs: Any) -> None:
        calls("not_for_creation", kwargs)

    explicit = make_handler(lambda **kw: calls("explicit", kw), id="explicit", reason=None)

    async def parent(**_: Any) -> None:
        await execute(handlers=[explicit])
        await execute(registry=registry)

    await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["explicit", "from_registry"]


async def test_subhandlers_are_filtered(settings: OperatorSettings, calls: Calls) -> None:
    async def parent(**_: Any) -> None:
        @kopf.subhandler(id="matching", labels={"app": "demo"})
        async def matching(**kwargs: Any) -> None:
            calls("matching", kwargs)

        @kopf.subhandler(id="mismatching", labels={"app": "other"})
        async def mismatching(**kwargs: Any) -> None:
            calls("mismatching", kwargs)

    await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["matching"]


async def test_failed_subhandlers_do_not_fail_the_parent(settings: OperatorSettings, calls: Calls) -> None:
    """As in the published framework: ``kopf.execute()`` returns when the sub-handlers are finished, failed too."""

    async def parent(**kwargs: Any) -> str:
        calls("entering", kwargs)
        await execute(fns={"bad": bad})
        calls("leaving", kwargs)
        return "after"

    async def bad(**_: Any) -> None:
        raise kopf.PermanentError("bad child")

    body, executions = await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["entering", "leaving"]  # the child fails at once; the parent goes on.
    assert executions[-1].state.succeeded == ["parent"]
    assert executions[-1].state.failed == []
    assert body["status"]["parent"] == "after"
    assert progress(body) == {}


async def test_failed_declared_subhandlers_do_not_fail_the_parent(
    settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    def parent(**_: Any) -> None:
        @kopf.subhandler(id="good")
        def good(**_: Any) -> str:
            return "g"

        @kopf.subhandler(id="broken")
        def broken(**_: Any) -> None:
            raise kopf.PermanentError("the child cannot succeed")

    caplog.set_level(logging.INFO)
    body, executions = await simulate([make_handler(parent)], settings)
    assert executions[-1].state.succeeded == ["parent"]
    assert body["status"]["parent/good"] == "g"
    messages = [record.getMessage() for record in caplog.records if record.levelno >= logging.INFO]
    assert messages == [
        "Handler 'parent/good' succeeded.",
        "Handler 'parent/broken' failed permanently: the child cannot succeed",
        "Handler 'parent' succeeded.",
    ]
    assert progress(body) == {}


async def test_parents_waiting_for_children_consume_their_retries(
    settings: OperatorSettings, calls: Calls, caplog: pytest.LogCaptureFixture
) -> None:
    """As in the published framework: every re-entry of a waiting parent is an attempt that counts."""

    async def parent(**kwargs: Any) -> None:
        calls("parent", kwargs)
        await execute(fns={"a": child, "b": child, "c": child})

    async def child(**kwargs: Any) -> None:
        calls("child", kwargs)

    caplog.set_level(logging.DEBUG)
    body, executions = await simulate([make_handler(parent, retries=2)], settings)
    assert [kwargs["retry"] for id, _, kwargs in calls.log if id == "parent"] == [0, 1]
    assert calls.ids() == ["parent", "child", "parent", "child"]  # the 3rd attempt is not made.
    assert executions[-1].state.failed == ["parent"]
    assert isinstance(executions[-1].outcomes["parent"].exception, kopf.HandlerRetriesError)
    messages = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert messages[-2:] == [
        (logging.DEBUG, "Handler 'parent' is invoked."),
        (logging.ERROR, "Handler 'parent' has exceeded 2 retries."),  # not as "failed permanently: …"
    ]
    assert progress(body) == {}  # incl. the sub-handlers' records.


async def test_parents_waiting_for_children_count_their_retries(settings: OperatorSettings, calls: Calls) -> None:
    """The parent's ``retry`` grows on every re-entry, its record's ``retries`` too, with ``message: "None"``."""

    async def parent(**kwargs: Any) -> None:
        calls("parent", kwargs)
        await execute(fns={"child": child})

    async def child(retry: int, **kwargs: Any) -> None:
        calls("child", kwargs)
        if retry < 3:
            raise kopf.TemporaryError("not ready", delay=1)

    body, _, _ = await cycle([make_handler(parent)], BODY, settings)
    records = progress(body)  # by the storages' keys: "parent" or "kopf.zalando.org/parent", and so on.
    record = next(record for key, record in records.items() if key.endswith("parent"))
    child_record = next(record for key, record in records.items() if key.endswith("child"))
    assert (record["retries"], record["message"], record["success"], record["failure"]) == (1, "None", False, False)
    assert record["subrefs"] == ["parent/child"]
    assert record["delayed"] == child_record["delayed"]  # when the sub-handler is due.

    calls.log.clear()
    body, executions = await simulate([make_handler(parent)], settings, body=body)
    assert [kwargs["retry"] for id, _, kwargs in calls.log if id == "parent"] == [1, 2, 3]
    assert executions[-1].state.succeeded == ["parent"]
    assert executions[-1].state["parent"].retries == 4
    assert progress(body) == {}


async def test_parents_waiting_for_children_time_out_on_reentry(
    settings: OperatorSettings, calls: Calls, caplog: pytest.LogCaptureFixture
) -> None:
    """The parent is not failed ahead of its timeout while waiting: it is re-entered, then stopped."""

    async def parent(**kwargs: Any) -> None:
        calls("parent", kwargs)
        await execute(fns={"child": child})

    async def child(**kwargs: Any) -> None:
        calls("child", kwargs)
        raise kopf.TemporaryError("not ready", delay=1)

    _, executions = await simulate([make_handler(parent, timeout=1.5)], settings)
    assert calls.times("parent") == [0, 1]
    assert calls.times("child") == [0, 1]
    assert isinstance(executions[-1].outcomes["parent"].exception, kopf.HandlerTimeoutError)
    assert asyncio.get_running_loop().time() == pytest.approx(2)
    errors = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert errors[-1].startswith("Handler 'parent' has timed out after 0:00:02")


async def test_execute_outside_of_handlers_fails() -> None:
    with pytest.raises(RuntimeError, match="inside of the change-detecting handlers"):
        await execute(fns={"a": lambda **_: None})


async def test_execute_with_several_sources_fails(settings: OperatorSettings) -> None:
    async def parent(**_: Any) -> None:
        await execute(fns=[], handlers=[])

    outcome = await run_once(make_handler(parent))
    assert isinstance(outcome.exception, TypeError)


async def test_declaring_subhandlers_outside_of_handlers_fails() -> None:
    with pytest.raises(subhandlers.NoParentHandlerError):
        kopf.register(lambda **_: None, id="x")


async def test_without_the_subhandling_hooks_only_explicit_handlers_work() -> None:
    seen: list[str] = []
    child = make_handler(lambda **_: seen.append("child"), id="child", reason=None)

    async def explicit(**_: Any) -> None:
        await execute(handlers=[child], lifecycle=lifecycles.all_at_once)

    async def by_fns(**_: Any) -> None:
        await execute(fns={"x": lambda **_: None})

    def declaring(**_: Any) -> None:
        kopf.register(lambda **_: None, id="x")

    settings = OperatorSettings()
    outcomes = {}
    for fn in [explicit, by_fns, declaring]:
        outcomes[fn.__name__] = await execute_handler_once(
            handler=make_handler(fn), state=HandlerState.from_scratch(), cause=make_cause(BODY), settings=settings
        )
    assert outcomes["explicit"] == HandlerOutcome(final=True, subrefs=("child",))
    assert seen == ["child"]
    assert isinstance(outcomes["by_fns"].exception, RuntimeError)
    assert isinstance(outcomes["declaring"].exception, subhandlers.NoParentHandlerError)


async def test_execute_with_an_explicit_cause_outside_of_handlers(settings: OperatorSettings) -> None:
    seen: list[str] = []
    handler = make_handler(lambda **_: seen.append("x"), id="x", reason=None)
    patch = Patch()
    await execute(handlers=[handler], cause=make_cause(BODY, patch))
    assert seen == ["x"]
    assert "kopf.zalando.org/x" in patch["metadata"]["annotations"]

    async def fail(**_: Any) -> None:
        raise kopf.TemporaryError("again", delay=7)

    with pytest.raises(HandlerChildrenRetry) as err:
        await execute(handlers=[make_handler(fail)], cause=make_cause(BODY))
    assert err.value.delay == pytest.approx(7, abs=0.1)


async def test_subregistry_is_isolated_per_handler_call() -> None:
    registries_seen: list[ChangingRegistry] = []

    def fn(**_: Any) -> None:
        registries_seen.append(subhandlers.get_current_subregistry())
        assert subhandlers.get_current_handler_id() == "fn"

    for _ in range(2):
        await run_once(make_handler(fn))
    assert len(registries_seen) == 2
    assert registries_seen[0] is not registries_seen[1]
    assert subhandlers.subregistry_var.get(None) is None


async def test_other_causes_with_in_memory_states(calls: Calls) -> None:
    """E.g. the activities: the same errors' semantics, but no persistence and no sub-handlers."""

    async def startup(retry: int, settings: OperatorSettings, **kwargs: Any) -> None:
        calls("startup", kwargs)
        if retry < 2:
            raise ValueError("not yet")

    async def declaring(**_: Any) -> None:
        kopf.register(lambda **_: None, id="x")

    settings = OperatorSettings()
    cause = ActivityCause(logger=LOGGER, activity="startup", settings=settings)
    handlers = [make_handler(startup, backoff=3), make_handler(declaring, errors=kopf.ErrorsMode.PERMANENT)]
    state = State({handler.id: HandlerState.from_scratch() for handler in handlers})
    for _ in range(10):
        if state.done:
            break
        outcomes = await run_handlers(
            handlers=handlers,
            state=state,
            cause=cause,
            settings=settings,
            subhandling=SUBHANDLING,
            lifecycle=lifecycles.all_at_once,
        )
        state = state.with_outcomes(outcomes)
        await asyncio.sleep(state.delay() or 0)
    assert calls.times("startup") == [0, 3, 6]
    assert state["startup"].success
    assert state["declaring"].failure
    assert "inside of a change-detecting handler" in (state["declaring"].message or "")


# The states & the storage.


def test_handler_state_round_trip() -> None:
    now = datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    state = HandlerState(
        started=now,
        stopped=now,
        delayed=None,
        purpose="update",
        retries=3,
        success=True,
        failure=False,
        message=None,
        subrefs=(HandlerId("a/b"),),
    )
    record = state.as_record()
    assert record == {
        "started": "2020-01-02T03:04:05+00:00",
        "stopped": "2020-01-02T03:04:05+00:00",
        "delayed": None,
        "purpose": "update",
        "retries": 3,
        "success": True,
        "failure": False,
        "message": None,
        "subrefs": ["a/b"],
    }
    assert HandlerState.from_record(record) == state


def test_handler_state_from_older_records() -> None:
    state = HandlerState.from_record({"started": "2020-01-02T03:04:05.123456", "retries": None, "delayed": "garbage"})
    assert state.started == datetime.datetime(2020, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.UTC)
    assert state.retries == 0
    assert state.delayed is None
    assert not state.finished


def test_handler_state_timing() -> None:
    now = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    later = now + datetime.timedelta(seconds=30)
    state = HandlerState(started=now, delayed=later)
    assert state.sleeping(now) and not state.awakened(now)
    assert state.delay(now) == 30
    assert state.awakened(later) and state.delay(later) == 0
    assert state.runtime(later) == datetime.timedelta(seconds=30)
    assert HandlerState(success=True).delay(now) is None
    assert not HandlerState(failure=True).awakened(now)


def test_handler_state_with_a_zero_delay_is_due_now() -> None:
    """As the published framework writes it: ``delayed`` is "now" for a zero delay, absent for ``None``."""
    now = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    state = HandlerState.from_scratch(purpose="create", now=now)
    zero = state.with_outcome(HandlerOutcome(final=False, delay=0, exception=kopf.TemporaryError("x")), now=now)
    none = state.with_outcome(HandlerOutcome(final=False, delay=None, exception=kopf.TemporaryError("x")), now=now)
    assert zero.as_record()["delayed"] == now.isoformat()
    assert none.as_record()["delayed"] is None
    assert zero.awakened(now) and none.awakened(now)
    assert zero.delay(now) == 0 and none.delay(now) == 0


def test_handler_state_with_outcomes() -> None:
    now = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    state = HandlerState.from_scratch(purpose="create", now=now)
    assert not state.dirty
    state = state.with_outcome(HandlerOutcome(final=False, delay=5, exception=ValueError("x")), now=now)
    assert (state.retries, state.delayed, state.message, state.dirty) == (
        1,
        now + datetime.timedelta(seconds=5),
        "x",
        True,
    )
    waiting = HandlerOutcome(final=False, delay=None, exception=HandlerChildrenRetry(delay=None), subrefs=("a",))
    state = state.with_outcome(waiting, now=now)
    assert (state.retries, state.delayed, state.subrefs, state.message) == (2, None, ("a",), "None")
    state = state.with_outcome(HandlerOutcome(final=True, result=1, subrefs=("a", "b")), now=now)
    assert (state.retries, state.success, state.failure, state.stopped, state.subrefs, state.message) == (
        3,
        True,
        False,
        now,
        ("a", "b"),
        None,
    )
    failed = HandlerState().with_outcome(HandlerOutcome(final=True, exception=kopf.PermanentError()), now=now)
    assert failed.failure and not failed.success and failed.message == ""  # as it is, as published


def test_state_store_writes_only_the_changed_states() -> None:
    storage = AnnotationsProgressStorage()
    body = Body(
        {
            "metadata": {
                "annotations": {
                    "kopf.zalando.org/old": json.dumps(
                        {"started": "2020-01-01T00:00:00", "retries": 1, "purpose": "create"}
                    ),
                }
            }
        }
    )
    handlers = [make_handler(lambda **_: None, id="old"), make_handler(lambda **_: None, id="new")]
    state = State.from_storage(body=body, storage=storage, handlers=handlers, purpose="create")
    assert state["old"].retries == 1
    assert state["new"].retries == 0
    patch = Patch()
    state.store(body=body, patch=patch, storage=storage)
    assert set(patch["metadata"]["annotations"]) == {"kopf.zalando.org/new"}  # the new one is stored at once
    record = json.loads(patch["metadata"]["annotations"]["kopf.zalando.org/new"])
    assert record["retries"] == 0 and record["purpose"] == "create" and "started" in record  # not yet executed
    stored = Body({"metadata": {"annotations": {**body.metadata.annotations, **patch["metadata"]["annotations"]}}})
    state = State.from_storage(body=stored, storage=storage, handlers=handlers, purpose="create")
    patch = Patch()
    state.store(body=stored, patch=patch, storage=storage)
    assert patch == {}  # nothing has changed since fetched: nothing is written
    state = state.with_outcomes({HandlerId("new"): HandlerOutcome(final=True)})
    state.store(body=stored, patch=patch, storage=storage)
    assert set(patch["metadata"]["annotations"]) == {"kopf.zalando.org/new"}


def test_state_purge_follows_the_subrefs_in_the_body_and_in_the_patch() -> None:
    storage = StatusProgressStorage()
    body = Body(
        {
            "status": {
                "kopf": {
                    "progress": {
                        "p": {"success": True, "subrefs": ["p/c"]},
                        "p/c": {"success": True, "subrefs": ["p/c/g"]},
                        "unrelated": {"success": True},
                    }
                }
            }
        }
    )
    patch = Patch(
        {
            "status": {
                "kopf": {"progress": {"p/c/g": {"success": True, "subrefs": ["p/c/g/x"]}, "p/c/g/x": {"success": True}}}
            }
        }
    )
    state = State.from_storage(body=body, storage=storage, handlers=[make_handler(lambda **_: None, id="p")])
    state.purge(body=body, patch=patch, storage=storage)
    assert patch == {"status": {"kopf": {"progress": {"p": None, "p/c": None}}}}


def test_state_purge_without_records_when_fetched_looks_none_up() -> None:
    storage = StatusProgressStorage()
    fetched: list[str] = []
    original_fetch = storage.fetch

    def spy(*, key: HandlerId, body: Body) -> Any:
        fetched.append(key)
        return original_fetch(key=key, body=body)

    storage.fetch = spy  # type: ignore[method-assign]
    body = Body({"status": {"kopf": {"progress": {"unrelated": {"success": True}}}}})
    state = State.from_storage(body=body, storage=storage, handlers=[make_handler(lambda **_: None, id="p")])
    assert fetched == ["p"]
    patch = Patch({"status": {"kopf": {"progress": {"p": {"success": True}}}}})  # e.g. stored in this cycle
    state.purge(body=body, patch=patch, storage=storage)
    assert fetched == ["p"]  # no records to look up for their sub-handlers: none were there, none ran
    assert patch == {}  # the pending record is removed from the patch (with its emptied parents)


def test_state_purge_removes_the_records_of_another_purpose_and_their_subrefs() -> None:
    storage = StatusProgressStorage()
    progress = {
        "p": {"purpose": "create", "subrefs": ["p/c"]},
        "p/c": {"purpose": "create", "success": True},
    }
    body = Body({"status": {"kopf": {"progress": progress}}})
    handler = make_handler(lambda **_: None, id="p")
    state = State.from_storage(body=body, storage=storage, handlers=[handler], purpose="delete")
    assert not state["p"].subrefs  # not used for this cycle: started from scratch
    patch = Patch()
    state.purge(body=body, patch=patch, storage=storage)
    assert patch == {"status": {"kopf": {"progress": {"p": None, "p/c": None}}}}


def test_deliver_results() -> None:
    patch = Patch()
    deliver_results(
        patch=patch,
        outcomes={
            HandlerId("a"): HandlerOutcome(final=True, result={"x": 1}),
            HandlerId("b"): HandlerOutcome(final=True, result=None),
            HandlerId("c"): HandlerOutcome(final=False, result="ignored", exception=ValueError()),
            HandlerId("d/e"): HandlerOutcome(final=True, result="nested id"),
        },
    )
    assert patch == {"status": {"a": {"x": 1}, "d/e": "nested id"}}


# Lifecycles.


def test_lifecycles() -> None:
    handlers = [make_handler(lambda **_: None, id=id) for id in ["a", "b", "c"]]
    state = {
        HandlerId("a"): HandlerState(retries=2),
        HandlerId("b"): HandlerState(retries=1),
        HandlerId("c"): HandlerState(retries=1),
    }
    assert [h.id for h in lifecycles.all_at_once(handlers)] == ["a", "b", "c"]
    assert [h.id for h in lifecycles.one_by_one(handlers)] == ["a"]
    assert [h.id for h in lifecycles.asap(handlers, state=state)] == ["b"]
    assert [h.id for h in lifecycles.asap(handlers)] == ["a"]
    assert len(lifecycles.randomized(handlers)) == 1
    assert sorted(h.id for h in lifecycles.shuffled(handlers)) == ["a", "b", "c"]
    for lifecycle in [
        lifecycles.all_at_once,
        lifecycles.one_by_one,
        lifecycles.asap,
        lifecycles.randomized,
        lifecycles.shuffled,
    ]:
        assert list(lifecycle([], state={})) == []


def test_default_lifecycle() -> None:
    assert lifecycles.get_default_lifecycle() is lifecycles.asap
    lifecycles.set_default_lifecycle(lifecycles.one_by_one)
    assert lifecycles.get_default_lifecycle() is lifecycles.one_by_one
    lifecycles.set_default_lifecycle(None)
    assert lifecycles.get_default_lifecycle() is lifecycles.asap


async def test_lifecycles_get_the_kwargs(settings: OperatorSettings) -> None:
    seen: dict[str, Any] = {}

    def lifecycle(handlers: Sequence[Any], **kwargs: Any) -> Sequence[Any]:
        seen.update(kwargs, handlers=handlers)
        return []

    handler = make_handler(lambda **_: None, id="a")
    _, patch, execution = await cycle([handler], BODY, settings, lifecycle=lifecycle)
    assert seen["handlers"] == [handler]
    assert isinstance(seen["state"], State)
    assert seen["body"]["metadata"]["name"] == "kex"
    assert not execution.done
    assert execution.outcomes == {}
    records = progress(patch)  # only the start of the pending handler is recorded: no results, no retries
    assert records and all(record["retries"] == 0 and not record["success"] for record in records.values())
    assert set(patch.get("status", {})) <= {"kopf"}


# Applying: delays & touches.


def test_get_delay() -> None:
    assert get_delay([]) is None
    assert get_delay([None]) is None
    assert get_delay([10, 5.5, None, 30]) == 5.5
    assert get_delay([-1, 5]) == 0


async def test_get_remaining_delay() -> None:
    loop = asyncio.get_running_loop()
    since = loop.time()
    await asyncio.sleep(3)
    assert get_remaining_delay(10, since=since) == pytest.approx(7)
    assert get_remaining_delay(2, since=since) == 0
    assert get_remaining_delay(None, since=since) is None


async def test_touch(settings: OperatorSettings) -> None:
    patch = build_touch_patch(body=Body(BODY), settings=settings)
    assert patch  # something is touched: an annotation or a status field.
    body = merge(BODY, patch)
    await asyncio.sleep(1)
    patch2 = Patch()
    touch(body=Body(body), patch=patch2, settings=settings)
    assert patch2 and patch2 != patch  # a new value every time.
    body = merge(body, patch2)
    assert build_touch_patch(body=Body(body), settings=settings, done=True)  # the dummy is removed.
    assert not build_touch_patch(body=Body(BODY), settings=settings, done=True)  # nothing to remove.


async def test_simulation_of_the_default_backoff_from_settings(settings: OperatorSettings, calls: Calls) -> None:
    def fn(retry: int, **kwargs: Any) -> None:
        calls("fn", kwargs)
        if retry < 2:
            raise ValueError("again")

    settings.execution.default_backoff = 7  # the handler sets no backoff=: the settings' one is used
    await simulate([make_handler(fn)], settings)
    assert calls.times("fn") == [0, 7, 14]


async def test_messages_of_the_final_failures_as_published(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="tests.execution")

    async def temp(**_: Any) -> None:
        raise kopf.TemporaryError("temp-msg", delay=10)

    async def arbitrary(**_: Any) -> None:
        raise ValueError("arbitrary-msg")

    state = HandlerState.from_scratch(purpose="create")
    await run_once(make_handler(temp, retries=1), state=state)
    await run_once(make_handler(arbitrary, retries=1), state=state)
    await run_once(make_handler(arbitrary, errors=kopf.ErrorsMode.PERMANENT), state=state)
    await run_once(make_handler(arbitrary, errors=kopf.ErrorsMode.IGNORED), state=state)
    await run_once(make_handler(temp, timeout=5), state=state)
    await run_once(make_handler(arbitrary, timeout=5, backoff=10), state=state)
    messages = [record.getMessage() for record in caplog.records]
    assert "Handler 'temp' failed temporarily but will exceed 1 retries: temp-msg" in messages
    assert (
        "Handler 'arbitrary' failed with an exception and will stop now "
        "(it would exceed 1 retries on the next attempt): arbitrary-msg"
    ) in messages
    assert "Handler 'arbitrary' failed with an exception and will stop now: arbitrary-msg" in messages
    assert "Handler 'arbitrary' failed with an exception and will ignore it: arbitrary-msg" in messages
    assert "Handler 'temp' failed temporarily but will time out after 5 seconds: temp-msg" in messages
    assert (
        "Handler 'arbitrary' failed with an exception and will stop now "
        "(it would time out in 5 seconds on the next attempt): arbitrary-msg"
    ) in messages
