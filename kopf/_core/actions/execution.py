"""
Executing the handlers of one object: one handling cycle at a time, with persisted progress.

A handling cycle is one pass over the handlers of a detected cause (creation, update, …)
of an object: it runs the handlers that are due now (not finished, not delayed) as
selected by the lifecycle (one per cycle by default), and records their progress
(retries, delays, successes, failures) into the object via the patch, with the results
of the succeeded handlers put into ``status.<handler id>``. The framework applies the
patch, which causes a new watch-event, and so the next cycle, until all handlers
are finished; then the progress records are purged.

The handlers themselves are accepted structurally (:class:`Handler`): any object with
the function & its options. The sub-handlers are supported via the hooks of
:class:`Subhandling`, which the higher layers implement (they know the registries);
without the hooks, only ``kopf.execute(handlers=[...])`` works.

The errors of the handlers are interpreted as documented:

* :class:`kopf.TemporaryError` — retry after its ``delay`` (``None`` for no delay).
* :class:`kopf.PermanentError` — fail the handler; no retries.
* any other ``Exception`` — by the handler's ``errors=`` mode: retry after
  ``backoff=`` (the default), fail (``PERMANENT``), or ignore as if succeeded (``IGNORED``).
* ``timeout=`` (seconds since the first attempt) and ``retries=`` (attempts) limit
  the retrying: the handler fails with :class:`kopf.HandlerTimeoutError` or
  :class:`kopf.HandlerRetriesError` respectively.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from kopf._cogs.aiokits.clock import utcnow
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.configs.progress import ProgressRecord, ProgressStorage
from kopf._cogs.structs import bodies, dicts, patches
from kopf._cogs.structs.ids import HandlerId
from kopf._core.actions import invocation, lifecycles
from kopf._core.actions.errors import (
    ErrorsMode,
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)


class Handler(Protocol):
    """What the execution needs from a handler (e.g. ``ChangingHandler`` of the registries)."""

    @property
    def fn(self) -> Callable[..., Any]: ...

    @property
    def id(self) -> HandlerId: ...

    @property
    def param(self) -> Any: ...

    @property
    def errors(self) -> ErrorsMode | None: ...

    @property
    def timeout(self) -> float | None: ...

    @property
    def retries(self) -> int | None: ...

    @property
    def backoff(self) -> float | None: ...


class Subhandling(Protocol):
    """
    The hooks for the sub-handlers, implemented by the layers that know the registries.

    ``activate()`` is entered around every handler call: it gives the handler a fresh
    registry for its sub-handlers (``@kopf.subhandler``, ``kopf.register``) and yields
    a getter of the handlers registered there so far.
    """

    def activate(self, handler: Handler) -> contextlib.AbstractContextManager[Callable[[], Sequence[Handler]]]: ...

    def from_fns(
        self,
        fns: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]],
        *,
        prefix: HandlerId | None,
    ) -> Sequence[Handler]:
        """Make handlers of functions (named by the mapping's keys, or by the functions)."""
        ...

    def from_registry(self, registry: Any) -> Sequence[Handler]:
        """All handlers of a registry, in their order."""
        ...

    def select(self, handlers: Sequence[Handler], *, cause: invocation.ChangingCause) -> Sequence[Handler]:
        """Those of the handlers whose filters match the cause now."""
        ...


class HandlerChildrenRetry(TemporaryError):
    """Raised from :func:`execute` when some sub-handlers are not finished yet: retry the parent."""


@dataclasses.dataclass(frozen=True)
class HandlerOutcome:
    """
    The outcome of one attempt of a handler.

    ``final`` means that the handler is finished: succeeded (no ``exception``) or failed.
    Non-final outcomes are retried after ``delay`` seconds (``None`` for no delay); the parents
    waiting for their sub-handlers have :class:`HandlerChildrenRetry` as their exception.
    """

    final: bool
    delay: float | None = None
    result: Any = None
    exception: BaseException | None = None
    subrefs: Collection[str] = ()


def _parse_time(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


def _render_time(value: datetime.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclasses.dataclass(frozen=True)
class HandlerState:
    """
    The persisted state of one handler within one handling cycle.

    ``started`` is the first attempt (or the first sight, if not attempted yet),
    ``stopped`` is when the handler finished, ``delayed`` is when it is due again,
    ``retries`` is the number of attempts made, ``purpose`` is the reason of the cycle.
    """

    started: datetime.datetime | None = None
    stopped: datetime.datetime | None = None
    delayed: datetime.datetime | None = None
    purpose: str | None = None
    retries: int = 0
    success: bool = False
    failure: bool = False
    message: str | None = None
    subrefs: tuple[HandlerId, ...] = ()
    dirty: bool = dataclasses.field(default=False, compare=False)  # changed since fetched.

    @classmethod
    def from_scratch(
        cls, *, purpose: str | None = None, now: datetime.datetime | None = None, dirty: bool = False
    ) -> HandlerState:
        return cls(started=now if now is not None else utcnow(), purpose=purpose, dirty=dirty)

    @classmethod
    def from_record(cls, record: ProgressRecord) -> HandlerState:
        retries = record.get("retries")
        return cls(
            started=_parse_time(record.get("started")),
            stopped=_parse_time(record.get("stopped")),
            delayed=_parse_time(record.get("delayed")),
            purpose=record.get("purpose"),
            retries=retries if isinstance(retries, int) else 0,
            success=bool(record.get("success")),
            failure=bool(record.get("failure")),
            message=record.get("message"),
            subrefs=tuple(HandlerId(ref) for ref in record.get("subrefs") or ()),
        )

    def as_record(self) -> ProgressRecord:
        return ProgressRecord(
            started=_render_time(self.started),
            stopped=_render_time(self.stopped),
            delayed=_render_time(self.delayed),
            purpose=str(self.purpose) if self.purpose is not None else None,  # not an enum: plain JSON.
            retries=self.retries,
            success=self.success,
            failure=self.failure,
            message=self.message,
            subrefs=list(self.subrefs) if self.subrefs else None,
        )

    @property
    def finished(self) -> bool:
        return self.success or self.failure

    def sleeping(self, now: datetime.datetime | None = None) -> bool:
        """Whether the handler is delayed (e.g. after an error) and is not due yet."""
        now = now if now is not None else utcnow()
        return not self.finished and self.delayed is not None and now < self.delayed

    def awakened(self, now: datetime.datetime | None = None) -> bool:
        """Whether the handler is due now: neither finished nor delayed."""
        return not self.finished and not self.sleeping(now)

    def runtime(self, now: datetime.datetime | None = None) -> datetime.timedelta:
        """How long the handler has been running (with its retries) since its first attempt."""
        now = now if now is not None else utcnow()
        return now - self.started if self.started is not None else datetime.timedelta(0)

    def delay(self, now: datetime.datetime | None = None) -> float | None:
        """Seconds until the handler is due (0 if due now), or ``None`` if it is finished."""
        if self.finished:
            return None
        now = now if now is not None else utcnow()
        if self.delayed is None:
            return 0.0
        return max(0.0, (self.delayed - now).total_seconds())

    def with_outcome(self, outcome: HandlerOutcome, now: datetime.datetime | None = None) -> HandlerState:
        now = now if now is not None else utcnow()
        subrefs = tuple(dict.fromkeys([*self.subrefs, *map(HandlerId, outcome.subrefs)]))
        started = self.started if self.started is not None else now
        if outcome.final:
            failed = outcome.exception is not None
            return dataclasses.replace(
                self,
                started=started,
                stopped=now,
                delayed=None,
                retries=self.retries + 1,
                success=not failed,
                failure=failed,
                subrefs=subrefs,
                dirty=True,
                # As it is, even if empty (unlike in the logs), as the published framework writes the records.
                message=str(outcome.exception) if outcome.exception is not None else None,
            )
        else:
            # Every non-final attempt counts, the parents' waiting for their sub-handlers included
            # (a special temporary error, as documented): so their `retry` grows and `retries=` limits them.
            # A zero delay is recorded as due now (as the published framework writes it); `None` as no delay at all.
            delayed = now + datetime.timedelta(seconds=outcome.delay) if outcome.delay is not None else None
            return dataclasses.replace(
                self,
                started=started,
                delayed=delayed,
                retries=self.retries + 1,
                subrefs=subrefs,
                message=str(outcome.exception) if outcome.exception is not None else None,
                dirty=True,
            )


def describe_error(exc: BaseException) -> str:
    """How the logs name an error: by its message, or if it has none, by its repr (``KeyError()``), as published."""
    return str(exc) or repr(exc)


def handler_title(handler: Handler) -> str:
    """How the logs name a handler: "Activity", "Daemon", "Timer", or "Handler" (by their distinct fields)."""
    if getattr(handler, "activity", None) is not None:
        kind = "Activity"
    elif type(handler).__name__ == "IndexingHandler":  # the intents are above this layer: no isinstance()
        kind = "Indexer"
    elif hasattr(handler, "interval"):
        kind = "Timer"
    elif hasattr(handler, "cancellation_polling"):
        kind = "Daemon"
    else:
        kind = "Handler"
    return f"{kind} {handler.id!r}"


def _exceeds_retries(handler: Handler, state: HandlerState) -> bool:
    """Whether the next attempt would be beyond the allowed number of retries."""
    return handler.retries is not None and state.retries + 1 >= handler.retries


def _exceeds_timeout(handler: Handler, state: HandlerState, delay: float) -> bool:
    """Whether the next attempt (after the delay) would be beyond the handler's timeout."""
    if handler.timeout is None:
        return False
    return state.runtime(utcnow()).total_seconds() + delay >= handler.timeout


def _limits_error(
    handler: Handler, state: HandlerState, name: str, now: datetime.datetime
) -> HandlerTimeoutError | HandlerRetriesError | None:
    """The error if the handler's timeout or retries are already used up before this attempt, else ``None``."""
    runtime = state.runtime(now)
    if handler.timeout is not None and runtime.total_seconds() >= handler.timeout:
        return HandlerTimeoutError(f"{name} has timed out after {runtime}.")
    if handler.retries is not None and state.retries >= handler.retries:
        return HandlerRetriesError(f"{name} has exceeded {state.retries} retries.")
    return None


def _retries_error(name: str, state: HandlerState, exc: BaseException) -> HandlerRetriesError:
    error = HandlerRetriesError(f"{name} has exceeded {state.retries + 1} retries: {describe_error(exc)}")
    error.__cause__ = exc
    return error


def _timeout_error(name: str, state: HandlerState, exc: BaseException) -> HandlerTimeoutError:
    error = HandlerTimeoutError(f"{name} would time out on the next attempt: {describe_error(exc)}")
    error.__cause__ = exc
    return error


class State(Mapping[str, HandlerState]):
    """The states of all handlers of one cycle, by their ids; immutable (``with_…`` make new ones)."""

    def __init__(
        self,
        states: Mapping[str, HandlerState],
        *,
        purpose: str | None = None,
        unrecorded: Collection[str] = (),
    ) -> None:
        super().__init__()
        self._states = dict(states)
        self.purpose = purpose
        # The ids that had no record (of any purpose) in the object when the states were fetched from it:
        # their purging looks up no records (and no sub-handlers' ids in them) unless they have got some since.
        self._unrecorded = frozenset(unrecorded)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._states!r})"

    def __len__(self) -> int:
        return len(self._states)

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __getitem__(self, key: str) -> HandlerState:
        return self._states[key]

    @classmethod
    def from_storage(
        cls,
        *,
        body: bodies.Body,
        storage: ProgressStorage,
        handlers: Iterable[Handler],
        purpose: str | None = None,
        now: datetime.datetime | None = None,
    ) -> State:
        """
        Fetch the states of the handlers from the object; the absent ones start from scratch.

        A record of another purpose (e.g. of an unfinished creation when the deletion comes)
        is not used for this cycle: the handler starts from scratch (and overwrites it).
        """
        now = now if now is not None else utcnow()
        states: dict[str, HandlerState] = {}
        unrecorded: list[str] = []
        for handler in handlers:
            if handler.id in states:
                continue
            record = storage.fetch(key=handler.id, body=body)
            if record is None:
                unrecorded.append(handler.id)
            recorded = HandlerState.from_record(record) if record is not None else None
            if recorded is None or (purpose is not None and recorded.purpose not in (None, purpose)):
                # Stored at once even if not executed in this cycle (as the published framework does):
                # the handlers' `started` & `runtime` (and so their timeouts) count from the cause's start.
                states[handler.id] = HandlerState.from_scratch(purpose=purpose, now=now, dirty=True)
            else:
                states[handler.id] = recorded
        return cls(states, purpose=purpose, unrecorded=unrecorded)

    def with_outcomes(self, outcomes: Mapping[str, HandlerOutcome], now: datetime.datetime | None = None) -> State:
        now = now if now is not None else utcnow()
        states = dict(self._states)
        for handler_id, outcome in outcomes.items():
            old = states.get(handler_id) or HandlerState.from_scratch(purpose=self.purpose, now=now)
            states[handler_id] = old.with_outcome(outcome, now=now)
        return type(self)(states, purpose=self.purpose, unrecorded=self._unrecorded)

    def store(self, *, body: bodies.Body, patch: patches.Patch, storage: ProgressStorage) -> None:
        """Put the changed states into the patch (via the storage); the unchanged ones are not written."""
        for handler_id, state in self._states.items():
            if state.dirty:
                storage.store(key=HandlerId(handler_id), record=state.as_record(), body=body, patch=patch)

    def purge(
        self, *, body: bodies.Body, patch: patches.Patch, storage: ProgressStorage, handlers: Iterable[Handler] = ()
    ) -> None:
        """
        Remove the records of the handlers and of all their sub-handlers (recursively, via ``subrefs``).

        The records stored in the patch of this cycle are also seen (and removed from the patch).
        """
        queue: list[str] = [*self._states, *(handler.id for handler in handlers)]
        # No records were in the object when fetched, and no sub-handlers have run since (they leave their ids
        # in the states): there are no records to look up, e.g. in a new object's first cycle, finished at once.
        lookup = not self._unrecorded.issuperset(queue) or any(state.subrefs for state in self._states.values())
        patched = bodies.Body(patches.merge_patched_view(body, patch)) if lookup else None
        seen: set[str] = set()
        while queue:
            key = queue.pop(0)
            if key in seen:
                continue
            seen.add(key)
            refs: list[str] = list(self._states[key].subrefs) if key in self._states else []
            record = storage.fetch(key=HandlerId(key), body=patched) if patched is not None else None
            if record is not None:
                refs.extend(record.get("subrefs") or ())
            queue.extend(ref for ref in refs if ref not in seen)
            storage.purge(key=HandlerId(key), body=body, patch=patch)

    @property
    def done(self) -> bool:
        """Whether all the handlers are finished (succeeded or failed)."""
        return all(state.finished for state in self._states.values())

    def delays(self, now: datetime.datetime | None = None) -> list[float]:
        """The delays (seconds) of all unfinished handlers until they are due (0 for those due now)."""
        now = now if now is not None else utcnow()
        return [delay for state in self._states.values() if (delay := state.delay(now)) is not None]

    def delay(self, now: datetime.datetime | None = None) -> float | None:
        """The delay until the next handler is due, or ``None`` if all are finished."""
        delays = self.delays(now)
        return min(delays) if delays else None

    @property
    def succeeded(self) -> list[str]:
        return [handler_id for handler_id, state in self._states.items() if state.success]

    @property
    def failed(self) -> list[str]:
        return [handler_id for handler_id, state in self._states.items() if state.failure]


def deliver_results(*, outcomes: Mapping[str, HandlerOutcome], patch: patches.Patch) -> None:
    """Put the handlers' results into ``status.<handler id>`` (``None`` results put nothing)."""
    for handler_id, outcome in outcomes.items():
        if outcome.final and outcome.exception is None and outcome.result is not None:
            dicts.ensure(patch, ("status", handler_id), outcome.result)


@dataclasses.dataclass
class _Invocation:
    """The context of one handler's call, for ``kopf.execute()`` inside of it."""

    handler: Handler
    cause: invocation.BaseCause
    settings: OperatorSettings
    lifecycle: lifecycles.LifeCycleFn
    subhandling: Subhandling | None
    subhandlers: Callable[[], Sequence[Handler]] = lambda: ()
    executed: bool = False  # whether the sub-handlers were executed explicitly.
    subrefs: list[HandlerId] = dataclasses.field(default_factory=list)


_invocation_var: contextvars.ContextVar[_Invocation] = contextvars.ContextVar("_invocation_var")
#: The handler being called outside of an execution (the event-watching ones: no retries, no sub-handlers).
_watching_handler_var: contextvars.ContextVar[HandlerId] = contextvars.ContextVar("_watching_handler_var")


def current_handler_id() -> HandlerId | None:
    """The id of the handler whose code runs in this context (None outside of any): e.g. for tracing its requests."""
    context = _invocation_var.get(None)
    return context.handler.id if context is not None else _watching_handler_var.get(None)


#: The reason of the change being handled (``create``, ``update``...): its handlers run, and its outcome is patched.
_changing_reason_var: contextvars.ContextVar[str] = contextvars.ContextVar("_changing_reason_var")
_T = TypeVar("_T")


def current_changing_reason() -> str | None:
    """The reason of the change whose handling runs in this context (None outside of any): e.g. to tell that a
    request (a handler's, or the framework's patch of the handlers' outcome) was made for an update."""
    return _changing_reason_var.get(None)


def changing_reason(reason: str) -> contextlib.AbstractContextManager[None]:
    """Tell :func:`current_changing_reason` which change is being handled in this context."""
    return _bound(_changing_reason_var, reason)


def watching_handler(handler_id: HandlerId) -> contextlib.AbstractContextManager[None]:
    """Tell :func:`current_handler_id` which event-watching handler runs in this context."""
    return _bound(_watching_handler_var, handler_id)


@contextlib.contextmanager
def _bound(var: contextvars.ContextVar[_T], value: _T) -> Iterator[None]:
    """The context variable set to the value meanwhile, then back to what it was."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


@dataclasses.dataclass(frozen=True)
class Execution:
    """
    The result of one handling cycle.

    ``delay`` is when the next handler is due (seconds; 0 for "immediately"),
    or ``None`` if all handlers are finished (``done``).
    """

    outcomes: Mapping[str, HandlerOutcome]
    state: State
    delay: float | None

    @property
    def done(self) -> bool:
        return self.state.done


async def execute_handlers_once(
    *,
    handlers: Sequence[Handler],
    cause: invocation.ChangingCause,
    settings: OperatorSettings,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    subhandling: Subhandling | None = None,
    purge: bool = True,
) -> Execution:
    """
    Run one handling cycle for the cause's object: execute the due handlers, persist the progress.

    The handlers are those selected for the cause (in the order of declaration).
    The progress records and the results go to ``cause.patch``; the body is not modified.
    When all handlers are finished, their progress records are purged (unless ``purge=False``).
    The caller applies the patch, and repeats the cycle after the returned delay
    (or on the next event of the object) as long as the execution is not done.
    """
    execution = await _execute_cycle(
        handlers=handlers, cause=cause, settings=settings, lifecycle=lifecycle, subhandling=subhandling, purge=purge
    )
    if execution.done and purge:
        execution.state.purge(
            body=cause.body, patch=cause.patch, handlers=handlers, storage=settings.persistence.progress_storage
        )
    return execution


async def _execute_cycle(
    *,
    handlers: Sequence[Handler],
    cause: invocation.ChangingCause,
    settings: OperatorSettings,
    lifecycle: lifecycles.LifeCycleFn | None,
    subhandling: Subhandling | None,
    purge: bool,
) -> Execution:
    storage = settings.persistence.progress_storage
    state = State.from_storage(body=cause.body, storage=storage, handlers=handlers, purpose=cause.reason)
    outcomes = await run_handlers(
        handlers=handlers, state=state, cause=cause, settings=settings, lifecycle=lifecycle, subhandling=subhandling
    )
    now = utcnow()
    state = state.with_outcomes(outcomes, now=now)
    if not (purge and state.done):  # else, the records would be purged right away (the subrefs are in memory)
        state.store(body=cause.body, patch=cause.patch, storage=storage)
    deliver_results(outcomes=outcomes, patch=cause.patch)
    return Execution(outcomes=outcomes, state=state, delay=state.delay(now))


async def run_handlers(
    *,
    handlers: Sequence[Handler],
    state: State,
    cause: invocation.BaseCause,
    settings: OperatorSettings,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    subhandling: Subhandling | None = None,
) -> dict[str, HandlerOutcome]:
    """
    Execute the due handlers as planned by the lifecycle, one at a time; no persistence here.

    The errors of the handlers are turned into their outcomes, so one failed handler
    does not prevent the others in the plan from being executed.
    """
    real_lifecycle = lifecycle if lifecycle is not None else lifecycles.get_default_lifecycle()
    now = utcnow()
    due = [handler for handler in handlers if handler.id in state and state[handler.id].awakened(now)]
    plan: Sequence[Handler] = real_lifecycle(handlers=due, state=state, **cause.kwargs()) if due else []
    outcomes: dict[str, HandlerOutcome] = {}
    for handler in plan:
        handler_state = state.get(handler.id) or HandlerState.from_scratch(purpose=getattr(cause, "reason", None))
        outcomes[handler.id] = await execute_handler_once(
            handler=handler,
            state=handler_state,
            cause=cause,
            settings=settings,
            lifecycle=real_lifecycle,
            subhandling=subhandling,
        )
    return outcomes


async def execute_handler_once(
    *,
    handler: Handler,
    state: HandlerState,
    cause: invocation.BaseCause,
    settings: OperatorSettings,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    subhandling: Subhandling | None = None,
) -> HandlerOutcome:
    """
    Make one attempt of a handler (if its timeout & retries allow) and interpret its errors.

    Any cause will do: the engines of other handlers (e.g. activities, daemons) can reuse
    the errors' semantics with their own (e.g. in-memory) states. The sub-handlers are
    supported only for the change-detecting causes.

    Only ``asyncio.CancelledError`` (and other non-``Exception`` errors) escape;
    all other errors become the outcomes.
    """
    logger = cause.logger
    name = handler_title(handler)
    errors_mode = handler.errors if handler.errors is not None else ErrorsMode.TEMPORARY
    backoff = handler.backoff if handler.backoff is not None else settings.execution.default_backoff
    context = _Invocation(
        handler=handler,
        cause=cause,
        settings=settings,
        subhandling=subhandling,
        lifecycle=lifecycle if lifecycle is not None else lifecycles.get_default_lifecycle(),
    )
    outcome: HandlerOutcome
    now = utcnow()
    if not name.startswith("Indexer"):  # too many: as the published framework, silent
        logger.debug(f"{name} is invoked.")  # as the published framework: even if the limits stop it now.
    limit_error = _limits_error(handler, state, name, now)
    if limit_error is not None:
        # Reached by the parents waiting for their sub-handlers (others fail at once ahead of the limits):
        # the message is logged as it is, as in the published framework, not as "failed permanently".
        logger.error(str(limit_error))
        return HandlerOutcome(final=True, exception=limit_error)
    try:
        result = await _invoke_handler(handler=handler, state=state, cause=cause, context=context, now=now)

    # The messages are worded as in the published framework: the operators' tests wait for them.
    except HandlerChildrenRetry as e:
        # Neither the retries nor the timeout are checked ahead here (as for other temporary errors):
        # as in the published framework, the parent is called again, and the limits stop it then.
        logger.debug(f"{name} has unfinished sub-handlers. Will retry soon.")
        outcome = HandlerOutcome(final=False, exception=e, delay=e.delay)
    except TemporaryError as e:
        delay = e.delay if e.delay is not None else 0
        if _exceeds_retries(handler, state):
            logger.error(f"{name} failed temporarily but will exceed {handler.retries} retries: {describe_error(e)}")
            outcome = HandlerOutcome(final=True, exception=_retries_error(name, state, e))
        elif _exceeds_timeout(handler, state, delay):
            logger.error(
                f"{name} failed temporarily but will time out after {handler.timeout} seconds: {describe_error(e)}"
            )
            outcome = HandlerOutcome(final=True, exception=_timeout_error(name, state, e))
        else:
            logger.error(f"{name} failed temporarily: {describe_error(e)}")
            outcome = HandlerOutcome(final=False, exception=e, delay=e.delay)
    except PermanentError as e:
        logger.error(f"{name} failed permanently: {describe_error(e)}")
        outcome = HandlerOutcome(final=True, exception=e)
    except Exception as e:
        if errors_mode == ErrorsMode.IGNORED:
            logger.exception(f"{name} failed with an exception and will ignore it: {describe_error(e)}")
            outcome = HandlerOutcome(final=True)
        elif errors_mode == ErrorsMode.PERMANENT:
            logger.exception(f"{name} failed with an exception and will stop now: {describe_error(e)}")
            outcome = HandlerOutcome(final=True, exception=e)
        elif _exceeds_retries(handler, state):
            logger.exception(
                f"{name} failed with an exception and will stop now "
                f"(it would exceed {handler.retries} retries on the next attempt): {describe_error(e)}"
            )
            outcome = HandlerOutcome(final=True, exception=_retries_error(name, state, e))
        elif _exceeds_timeout(handler, state, backoff):
            logger.exception(
                f"{name} failed with an exception and will stop now "
                f"(it would time out in {handler.timeout} seconds on the next attempt): {describe_error(e)}"
            )
            outcome = HandlerOutcome(final=True, exception=_timeout_error(name, state, e))
        else:
            logger.exception(
                f"{name} failed with an exception and will try again in {backoff} seconds: {describe_error(e)}"
            )
            outcome = HandlerOutcome(final=False, exception=e, delay=backoff)
    else:
        logger.info(f"{name} succeeded.")
        outcome = HandlerOutcome(final=True, result=result)

    return dataclasses.replace(outcome, subrefs=tuple(context.subrefs)) if context.subrefs else outcome


async def _invoke_handler(
    *,
    handler: Handler,
    state: HandlerState,
    cause: invocation.BaseCause,
    context: _Invocation,
    now: datetime.datetime,
) -> Any:
    """Call the handler with the per-handler kwargs and the sub-handlers' context; run the sub-handlers."""
    started = state.started if state.started is not None else now
    extra: dict[str, Any] = dict(param=handler.param, retry=state.retries, started=started, runtime=now - started)
    field = getattr(handler, "field", None)
    if field and isinstance(cause, invocation.ChangingCause):
        reduced = invocation.reduce_to_field(cause.cached_framework_kwargs(), field)
        extra.update(old=reduced["old"], new=reduced["new"], diff=reduced["diff"])

    activation: contextlib.AbstractContextManager[Callable[[], Sequence[Handler]]]
    if context.subhandling is not None and isinstance(cause, invocation.ChangingCause):
        activation = context.subhandling.activate(handler)
    else:
        activation = contextlib.nullcontext(lambda: ())

    with activation as subhandlers:
        context.subhandlers = subhandlers
        token = _invocation_var.set(context)
        try:
            # The timeout is judged between the attempts only, not during one, async or sync (as the published
            # framework does, though its documentation says that the async ones are cancelled): so an attempt that
            # has begun in time finishes, and its outcome stands.
            result = await invocation.invoke(handler.fn, cause=cause, kwargs=extra, settings=context.settings)

            # The sub-handlers that were declared but not executed explicitly, are executed implicitly.
            if not context.executed and subhandlers():
                await execute()
        finally:
            _invocation_var.reset(token)
    return result


async def execute(
    *,
    fns: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] | None = None,
    handlers: Iterable[Handler] | None = None,
    registry: Any | None = None,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    cause: invocation.ChangingCause | None = None,
) -> None:
    """
    Execute the sub-handlers of the current handler in place; return when all of them are finished.

    The sub-handlers are either the functions (``fns``: a mapping of ids to functions,
    or an iterable of functions named by themselves), or the ready handlers (``handlers``),
    or a registry of them (``registry``), or, if none of these are given, those declared
    in the current handler with ``@kopf.subhandler`` or ``kopf.register()``.
    Their ids are prefixed with the current handler's id.

    Each call executes one cycle of the sub-handlers (by the lifecycle), with their progress
    persisted as of the regular handlers. If some of them are not finished, the current
    handler is interrupted (by a special temporary error) and is called again later
    to continue with them; so the code after ``kopf.execute()`` runs only once, when all
    the sub-handlers are finished: succeeded or failed (a failed one does not fail the parent).
    """
    context = _invocation_var.get(None)
    if sum(value is not None for value in (fns, handlers, registry)) > 1:
        raise TypeError("Only one of fns=, handlers=, registry= can be passed to kopf.execute().")

    real_cause = cause if cause is not None else context.cause if context is not None else None
    if real_cause is None:
        raise RuntimeError(
            "kopf.execute() can be used only inside of the change-detecting handlers (or with an explicit cause=)."
        )
    if not isinstance(real_cause, invocation.ChangingCause):
        raise RuntimeError(
            "Sub-handlers are supported only for the change-detecting handlers "
            "(others have neither retries nor progress to track)."
        )

    subhandling = context.subhandling if context is not None else None
    settings = context.settings if context is not None else OperatorSettings()
    prefix = context.handler.id if context is not None else None
    real_lifecycle = (
        lifecycle
        if lifecycle is not None
        else context.lifecycle
        if context is not None
        else lifecycles.get_default_lifecycle()
    )

    candidates: Sequence[Handler]
    if handlers is not None:
        candidates = list(handlers)
    elif subhandling is None:
        raise RuntimeError("Sub-handlers are not supported here: only kopf.execute(handlers=...) works.")
    elif fns is not None:
        candidates = subhandling.from_fns(fns, prefix=prefix)
    elif registry is not None:
        candidates = subhandling.from_registry(registry)
    elif context is not None:
        candidates = context.subhandlers()
    else:
        raise RuntimeError("There is no current handler with the sub-handlers to execute.")
    selected = subhandling.select(candidates, cause=real_cause) if subhandling is not None else candidates

    if context is not None:
        context.executed = True
        context.subrefs.extend(handler.id for handler in selected if handler.id not in context.subrefs)

    execution = await _execute_cycle(  # stored: the parent's records purge them by their ids when it is done
        handlers=selected,
        cause=real_cause,
        settings=settings,
        lifecycle=real_lifecycle,
        subhandling=subhandling,
        purge=False,
    )
    if not execution.done:
        # No message: the parent's progress record gets "None" as its message, as in the published framework.
        raise HandlerChildrenRetry(delay=execution.delay)
    # The failed sub-handlers do not fail the parent (as in the published framework): they are finished, and
    # their failures are logged & recorded on their own; the code after `kopf.execute()` runs as usual.
