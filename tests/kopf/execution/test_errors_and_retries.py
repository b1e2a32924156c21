"""The handlers' errors & retries: the outcomes."""

import asyncio
import datetime
import logging
from typing import Any

import pytest

import kopf
from kopf._cogs.aiokits.clock import utcnow
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.actions.execution import HandlerOutcome, HandlerState

from .helpers import BODY, Calls, cycle, make_handler, run_once, simulate

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


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
