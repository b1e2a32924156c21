"""
Daemons & timers: the background tasks that accompany the individual objects.

Every object has its :class:`DaemonsMemory` (kept by the reactor along with the object's
other in-memory state). For every spawning handler (``@kopf.daemon``, ``@kopf.timer``)
that matches the object, one asyncio task runs per object; the sync functions run
in the operator's executor (via the invocation), the async ones in that task directly.

How the reactor uses this engine, per object:

* :func:`spawn_daemons` on every watch-event of a living object, with the spawning handlers
  that match the object now: it refreshes the live body (the kwargs of the daemons & timers
  follow the object), notices the change (for the idling timers), starts the missing
  daemons & timers, and stops those that do not match anymore (``FILTERS_MISMATCH``).
* :func:`stop_daemons` when the object is marked for deletion (``RESOURCE_DELETED``):
  the daemons are signalled, then terminated in stages in the background (see below);
  it returns ``None`` when all of them are gone (the finalizer can be released),
  or the delay until it is worth checking again (the finalizer is kept meanwhile).
* :func:`daemon_killer` as an operator-wide root task: it stops all daemons of all objects
  when the operator is paused (``OPERATOR_PAUSING``) or exits (``OPERATOR_EXITING``);
  :func:`stop_all` does the same once.

The termination of a daemon goes in stages, all measured from the moment of the stop request:

1. The ``stopped`` flag is set at once; ``cancellation_backoff`` seconds are given to exit.
2. With ``cancellation_timeout`` set, async daemons are cancelled (``asyncio.CancelledError``);
   ``cancellation_timeout`` more seconds are given to exit.
3. If still running: with ``cancellation_timeout`` set, the daemon is abandoned (a warning
   is logged, a ``ResourceWarning`` is issued) and counts as stopped; without it,
   the daemon is waited for forever, with a log message every ``cancellation_polling``
   seconds (of the handler, else of ``settings.background``).

The errors of daemons & timers are treated like those of other handlers (``errors=``,
``backoff=``, ``retries=``, ``timeout=``, :class:`kopf.TemporaryError`, :class:`kopf.PermanentError`),
with the retrying state kept in memory: a daemon is restarted after the delay of the error;
a timer's schedule is overridden by the delay. A daemon that exits on its own (successfully
or failing permanently) is not restarted for this object while the operator runs.
The results are put into ``status.<handler id>`` via the patch sink (as are the handlers' patches).
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import enum
import logging
import math
import threading
import warnings
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from kopf._cogs.aiokits import syncwaits
from kopf._cogs.clients import watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import bodies, ephemera, patches
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.references import Resource
from kopf._core.actions import application, execution, invocation
from kopf._core.intents.handlers import DaemonHandler, SpawningHandler, TimerHandler

logger = logging.getLogger(__name__)

#: Applies a patch to the object (e.g. via the API); used for the results & the patches of daemons & timers.
PatchSink = Callable[[patches.Patch], Awaitable[object]]

_EMPTY: Mapping[str, Any] = {}

#: How long (seconds) the operator's exit waits for the daemons & timers to stop before cancelling them.
EXITING_TIMEOUT = 5.0


def _termination_time(handler: SpawningHandler) -> float:
    """How long a daemon's own stages of termination may take: its cancellation backoff and timeout (if any)."""
    timeout = getattr(handler, "cancellation_timeout", None)
    if timeout is None:
        return 0.0
    return float(getattr(handler, "cancellation_backoff", None) or 0.0) + float(timeout)


#: Guards the lazy creation of the stop-flags' thread events (set in the loop, waited in the threads).
_EVENTS_LOCK = threading.Lock()


class DaemonStoppingReason(enum.Flag):
    """
    Why a daemon (or a timer) is being stopped; several reasons can be combined.

    The daemon's ``stopped`` flag is one for all reasons; the daemons that care
    can check ``stopped.reason`` to see why they are asked to exit.
    """

    NONE = 0
    DONE = 1
    FILTERS_MISMATCH = 2
    RESOURCE_DELETED = 4
    OPERATOR_PAUSING = 8
    OPERATOR_EXITING = 16
    DAEMON_SIGNALLED = 32
    DAEMON_CANCELLED = 64
    DAEMON_ABANDONED = 128


class DaemonStopper:
    """
    The framework's side of a stop-flag: raised in the event loop, observed anywhere (threads too).

    The async waiters are futures of the operator's loop; the sync waiters use a thread event.
    A "wake-up" resolves the async waiters without raising the flag: e.g. on the object's
    changes, the idling timers re-check their schedule.
    """

    __slots__ = ("_event", "_flag", "_loop", "_waiters", "reason", "when")

    def __init__(self) -> None:
        super().__init__()
        self._loop = asyncio.get_running_loop()
        self._flag = False
        self._event: threading.Event | None = None  # created on the first sync waiting (it is heavy).
        self._waiters: set[asyncio.Future[None]] | None = None
        self.reason = DaemonStoppingReason.NONE
        self.when: float | None = None  # the loop time of the first stop request.

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {'set' if self.is_set() else 'unset'}, reason={self.reason!r}>"

    def is_set(self) -> bool:
        return self._flag

    def set(self, reason: DaemonStoppingReason = DaemonStoppingReason.DAEMON_SIGNALLED) -> None:
        """Raise the flag (if not yet) and add the reason; thread-safe."""
        with _EVENTS_LOCK:
            self.reason |= reason
            self._flag = True
            event = self._event
        if self.when is None:
            self.when = self._loop.time()
        if event is not None:
            event.set()
        self.wake()

    def wake(self) -> None:
        """Wake up the async waiters (they re-check their conditions); thread-safe."""
        if not self._waiters:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        for waiter in list(self._waiters or ()):
            if not waiter.done():
                waiter.set_result(None)

    def wait_sync(self, timeout: float | None = None) -> bool:
        """Block the thread until the flag is raised or the timeout is reached; return the flag."""
        event = self._event  # made once, never replaced: the lock only for the first wait
        if event is None:
            with _EVENTS_LOCK:
                if self._event is None:
                    self._event = threading.Event()
                    if self._flag:
                        self._event.set()
                event = self._event
        return syncwaits.wait_event(event, timeout)

    async def wait_async(self, timeout: float | None = None, *, wakeable: bool = False) -> bool:
        """
        Wait until the flag is raised or the timeout is reached; return the flag.

        With ``wakeable=True``, a wake-up ends the waiting early (the flag can still be off).
        """
        loop = self._loop
        deadline = loop.time() + timeout if timeout is not None else None
        while not self.is_set():
            remaining = deadline - loop.time() if deadline is not None else None
            if remaining is not None and remaining <= 0:
                break
            waiter: asyncio.Future[None] = loop.create_future()
            if self._waiters is None:
                self._waiters = set()
            self._waiters.add(waiter)
            try:
                if remaining is None:
                    await waiter
                else:
                    handle = loop.call_at(loop.time() + remaining, _resolve, waiter)
                    try:
                        await waiter
                    finally:
                        handle.cancel()
            finally:
                self._waiters.discard(waiter)
                if not self._waiters:
                    self._waiters = None
            if wakeable:
                break
        return self.is_set()


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class DaemonStopped(abc.ABC):
    """
    The ``stopped`` kwarg of the daemons: a read-only flag that tells the daemon to exit.

    It is truthy when the daemon is requested to stop (``while not stopped: ...``),
    and has the reason(s) of stopping (:class:`DaemonStoppingReason`). The sync daemons
    get it with a blocking ``wait(timeout)``, the async daemons with an awaitable one
    (``await stopped.wait(timeout)``; ``await stopped`` waits with no timeout).
    ``wait()`` returns the flag, so it can be used as ``while not stopped.wait(10): ...``.
    """

    __slots__ = ("_stopper",)

    def __init__(self, stopper: DaemonStopper) -> None:
        super().__init__()
        self._stopper = stopper

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.is_set()}, reason={self.reason!r}>"

    def __bool__(self) -> bool:
        return self.is_set()

    def is_set(self) -> bool:
        return self._stopper.is_set()

    @property
    def reason(self) -> DaemonStoppingReason:
        return self._stopper.reason

    @abc.abstractmethod
    def wait(self, timeout: float | None = None) -> Any:
        """Wait until stopped or for ``timeout`` seconds (blocking for sync daemons, awaitable for async ones)."""


class SyncDaemonStopped(DaemonStopped):
    """The stop-flag for the sync daemons: ``stopped.wait(10)`` instead of ``time.sleep(10)``."""

    __slots__ = ()

    def wait(self, timeout: float | None = None) -> bool:
        return self._stopper.wait_sync(timeout)


class AsyncDaemonStopped(DaemonStopped):
    """The stop-flag for the async daemons: ``await stopped.wait(10)`` instead of ``asyncio.sleep(10)``."""

    __slots__ = ()

    async def wait(self, timeout: float | None = None) -> bool:
        return await self._stopper.wait_async(timeout)

    def __await__(self) -> Any:
        return self._stopper.wait_async().__await__()


@dataclasses.dataclass(frozen=True, kw_only=True)
class DaemonCause(invocation.SpawningCause):
    """The kwargs of a daemon: as of all resource handlers, plus the ``stopped`` flag."""

    stopped: DaemonStopped

    def framework_kwargs(self) -> dict[str, Any]:
        return {**super().framework_kwargs(), "stopped": self.stopped}


@dataclasses.dataclass(slots=True, eq=False)
class Daemon:
    """One running daemon or timer of one object."""

    handler: SpawningHandler
    stopper: DaemonStopper
    logger: invocation.LoggerLike
    task: asyncio.Task[None] | None = None
    terminator: asyncio.Task[None] | None = None
    abandoned: bool = False
    #: When (loop time) the next call is due, if one is scheduled; ``delayed``: it waits for a delay (the initial
    #: delay, a retry's backoff, the idling), not for a timer's regular interval; ``called``: when (loop time) the
    #: last call has ended; ``started``: when it began (the object as it was then is what it has seen);
    #: ``written``: the resource version that the patch of its results has made (its own change, not news).
    #: Nothing reads them but observers (e.g. test harnesses waiting for the operator).
    due: float | None = None
    delayed: bool = False
    called: float | None = None
    started: float | None = None
    written: str | None = None

    @property
    def done(self) -> bool:
        """Whether the daemon is gone (or is abandoned and does not count anymore)."""
        return self.abandoned or self.task is None or self.task.done()

    def schedule(self, due: float | None, *, delayed: bool = False) -> None:
        self.due, self.delayed = due, delayed


@dataclasses.dataclass(slots=True, eq=False)
class DaemonsMemory:
    """
    The daemons & timers of one object, and what they need to know about it.

    ``live_body`` follows the object: its content is replaced on every event.
    ``idle_reset_time`` is the loop time of the object's last change (for the idling timers).
    ``exhausted`` are the daemons & timers that exited on their own: never respawned for this object.
    """

    live_body: bodies.Body | None = None
    idle_reset_time: float | None = None
    running: dict[HandlerId, Daemon] = dataclasses.field(default_factory=dict)
    exhausted: set[HandlerId] = dataclasses.field(default_factory=set)
    changes: int = 0

    @property
    def daemons(self) -> Collection[Daemon]:
        return list(self.running.values())

    @property
    def stopped(self) -> bool:
        """Whether there are no daemons running (or all of them are abandoned)."""
        return all(daemon.done for daemon in self.running.values())


def notice_change(memory: DaemonsMemory, body: Mapping[str, Any] | None = None) -> None:
    """
    Remember that the object has changed (now): the idling timers start counting anew.

    If the new body is given, the live body of the daemons & timers is refreshed too.
    """
    if body is not None:
        _refresh_body(memory, body)
    memory.idle_reset_time = asyncio.get_running_loop().time()
    memory.changes += 1
    for daemon in list(memory.running.values()):
        if isinstance(daemon.handler, TimerHandler):
            daemon.stopper.wake()


def _refresh_body(memory: DaemonsMemory, body: Mapping[str, Any]) -> None:
    raw = body._src if isinstance(body, bodies.Body) else body
    if memory.live_body is None:
        memory.live_body = bodies.Body(raw)
    else:
        memory.live_body._replace_with(raw)


async def spawn_daemons(
    *,
    settings: OperatorSettings,
    handlers: Sequence[SpawningHandler],
    memory: DaemonsMemory,
    body: Mapping[str, Any],
    resource: Resource,
    logger: invocation.LoggerLike,
    memo: ephemera.AnyMemo = None,
    indices: Mapping[str, Any] | None = None,
    patch_sink: PatchSink | None = None,
    changed: bool = True,
) -> None:
    """
    Bring the object's daemons & timers in line with the handlers that match the object now.

    Called on every watch-event of a living (not deleted) object. ``handlers`` are the spawning
    handlers whose filters match the object now (e.g. ``registry.spawning.get_handlers(...)``).
    The live body is refreshed (with ``changed=True``, the change is noticed for the idling timers).
    The missing daemons & timers are started (unless they have exited on their own before,
    or are still terminating); the ones that do not match anymore are signalled to stop.
    ``patch_sink`` applies the patches & results of the daemons & timers to the object.
    """
    if changed:
        notice_change(memory, body)
    else:
        _refresh_body(memory, body)
    live_body = memory.live_body
    assert live_body is not None

    wanted = {handler.id for handler in handlers}
    for handler_id, daemon in list(memory.running.items()):
        if handler_id not in wanted and not daemon.stopper.is_set():
            daemon.logger.debug(f"{_title(daemon.handler)} {handler_id!r} does not match the filters; stopping it.")
            _request_stop(
                daemon, DaemonStoppingReason.FILTERS_MISMATCH, settings=settings, memory=memory, patch_sink=patch_sink
            )

    loop = asyncio.get_running_loop()
    for handler in handlers:
        if handler.id in memory.running or handler.id in memory.exhausted:
            continue
        daemon = Daemon(handler=handler, stopper=DaemonStopper(), logger=logger)
        coro: Awaitable[None]
        if isinstance(handler, TimerHandler):
            coro = _run_timer(
                daemon=daemon,
                memory=memory,
                settings=settings,
                resource=resource,
                memo=memo,
                indices=indices or _EMPTY,
                patch_sink=patch_sink,
            )
        else:
            coro = _run_daemon(
                daemon=daemon,
                memory=memory,
                settings=settings,
                resource=resource,
                memo=memo,
                indices=indices or _EMPTY,
                patch_sink=patch_sink,
            )
        name = f"{_title(handler).lower()} {handler.id!r} of {_describe_body(live_body)}"
        daemon.task = loop.create_task(_guard(daemon, memory, coro), name=name)
        memory.running[handler.id] = daemon


async def stop_daemons(
    *,
    settings: OperatorSettings,
    memory: DaemonsMemory,
    reason: DaemonStoppingReason = DaemonStoppingReason.RESOURCE_DELETED,
    patch_sink: PatchSink | None = None,
) -> float | None:
    """
    Request all daemons & timers of the object to stop; the termination goes on in the background.

    Returns ``None`` if all of them are stopped (or abandoned) — the object can be released —
    or the delay (seconds) after which it makes sense to check again (the finalizer stays).
    When a daemon exits later (or is abandoned), the object is "touched" via ``patch_sink``
    (if given), so that a new watch-event comes and the check is repeated.
    """
    for daemon in list(memory.running.values()):
        _request_stop(daemon, reason, settings=settings, memory=memory, patch_sink=patch_sink, terminate=False)

    # Let the daemons that exit instantly (e.g. those sleeping on the stop-flag) do so; terminate the rest.
    for _ in range(settings.background.instant_exit_zero_time_cycles or 0):
        if memory.stopped:
            break
        await asyncio.sleep(0)
    for daemon in list(memory.running.values()):
        _ensure_terminator(daemon, settings=settings, memory=memory, patch_sink=patch_sink)

    now = asyncio.get_running_loop().time()
    delays: list[float] = []
    for daemon in memory.running.values():
        if daemon.done:
            continue
        backoff, timeout, polling = _termination_options(daemon.handler, settings)
        since = daemon.stopper.when if daemon.stopper.when is not None else now
        if timeout is not None:
            delays.append(max(0.0, since + (backoff or 0) + timeout - now))
        else:
            delays.append(polling)
    return min(delays) if delays else None


async def stop_all(
    memories: Iterable[DaemonsMemory],
    *,
    settings: OperatorSettings,
    reason: DaemonStoppingReason = DaemonStoppingReason.OPERATOR_EXITING,
) -> None:
    """
    Stop all daemons & timers of all objects; return when all of them are gone or abandoned.

    The daemons get ``settings.background.instant_exit_zero_time_cycles`` event-loop cycles
    and then ``settings.background.instant_exit_timeout`` seconds to exit instantly;
    then, they are terminated in the usual stages of their handlers' cancellation options.
    The daemons with no ``cancellation_timeout`` that ignore the stop-flag are waited for
    until this coroutine is cancelled (e.g. by the operator's hung-tasks timeout):
    then, all the remaining tasks are cancelled (the threads of the sync ones are left as is).
    """
    daemons: list[tuple[Daemon, DaemonsMemory]] = []
    for memory in list(memories):
        for daemon in list(memory.running.values()):
            _request_stop(daemon, reason, settings=settings, memory=memory, patch_sink=None, terminate=False)
            daemons.append((daemon, memory))
    if not daemons:
        return
    try:
        await _stop_all(daemons, settings=settings)
    finally:
        for daemon, _ in daemons:  # worded as the published framework does it: the operators' tests wait for it
            if daemon.done and not daemon.abandoned:
                daemon.logger.debug(f"{_title(daemon.handler)} {daemon.handler.id!r} has exited gracefully.")


async def _stop_all(daemons: list[tuple[Daemon, DaemonsMemory]], *, settings: OperatorSettings) -> None:
    try:
        for _ in range(settings.background.instant_exit_zero_time_cycles or 0):
            if all(daemon.done for daemon, _ in daemons):
                return
            await asyncio.sleep(0)
        timeout = settings.background.instant_exit_timeout
        if timeout is not None and not all(daemon.done for daemon, _ in daemons):
            tasks = [daemon.task for daemon, _ in daemons if daemon.task is not None and not daemon.done]
            if tasks:
                await asyncio.wait(tasks, timeout=timeout)
        for daemon, memory in daemons:
            _ensure_terminator(daemon, settings=settings, memory=memory, patch_sink=None)
        terminators = [daemon.terminator for daemon, _ in daemons if daemon.terminator is not None and not daemon.done]
        if terminators:
            await asyncio.wait(terminators)
    except asyncio.CancelledError:
        for daemon, _ in daemons:
            for task in (daemon.task, daemon.terminator):
                if task is not None and not task.done():
                    task.cancel()
        raise


async def daemon_killer(
    *,
    settings: OperatorSettings,
    memories: Callable[[], Iterable[DaemonsMemory]],
    operator_paused: watching.PauseFlag | None = None,
) -> None:
    """
    An operator-level root task: stop all daemons when the operator pauses or exits.

    ``memories`` gives the daemons' memories of all objects known now. ``operator_paused``
    is a toggle (or a toggle set) with ``wait_for(bool)``: while it is on, the daemons are
    stopped (``OPERATOR_PAUSING``); they are spawned again on the objects' next events.
    On cancellation (the operator's exit), all daemons are stopped (``OPERATOR_EXITING``), waiting for them
    as long as their cancellation options allow and :data:`EXITING_TIMEOUT` seconds more; those still running
    are cancelled then.
    """
    try:
        while operator_paused is None:
            await asyncio.Event().wait()
        while True:
            await operator_paused.wait_for(True)
            await stop_all(memories(), settings=settings, reason=DaemonStoppingReason.OPERATOR_PAUSING)
            await operator_paused.wait_for(False)
    except asyncio.CancelledError:
        # A daemon that ignores its stop-flag (and has no cancellation timeout) must not hold the exit forever:
        # as documented, the exit waits for the daemons a few seconds, then cancels those left ("hung" tasks).
        # The daemons with a cancellation timeout get their own stages first (backoff, then timeout), and then
        # the few seconds of the hung tasks.
        known = list(memories())
        limit = EXITING_TIMEOUT + max(
            (_termination_time(daemon.handler) for memory in known for daemon in memory.running.values()), default=0.0
        )
        try:
            async with asyncio.timeout(limit):
                await stop_all(known, settings=settings, reason=DaemonStoppingReason.OPERATOR_EXITING)
        except TimeoutError:
            logger.warning(
                f"Some daemons have not exited in {limit}s after the operator's exit began; they are cancelled."
            )
            leftovers = [
                daemon.task
                for memory in known
                for daemon in memory.running.values()
                if daemon.task is not None and not daemon.task.done()
            ]
            for task in leftovers:
                task.cancel()
            if leftovers:
                await asyncio.wait(leftovers, timeout=EXITING_TIMEOUT)
        raise


# -------------------------------------------------------------------------------------------------
# The internals: stopping, running, sleeping.
# -------------------------------------------------------------------------------------------------


def _termination_options(
    handler: SpawningHandler, settings: OperatorSettings
) -> tuple[float | None, float | None, float]:
    if isinstance(handler, DaemonHandler):
        polling = handler.cancellation_polling
        return (
            handler.cancellation_backoff,
            handler.cancellation_timeout,
            polling if polling is not None else settings.background.cancellation_polling,
        )
    return None, None, settings.background.cancellation_polling


def _request_stop(
    daemon: Daemon,
    reason: DaemonStoppingReason,
    *,
    settings: OperatorSettings,
    memory: DaemonsMemory,
    patch_sink: PatchSink | None,
    terminate: bool = True,
) -> None:
    """
    Raise the daemon's stop-flag; start its terminator (once) if the daemon is not gone yet.

    With ``terminate=False``, only the flag is raised: the caller gives the daemons a chance
    to exit instantly (in a few zero-time loop cycles) and starts the terminators after that
    (see :func:`_ensure_terminator`); the stages are measured from the stop request anyway.
    """
    daemon.stopper.set(reason)
    if terminate:
        _ensure_terminator(daemon, settings=settings, memory=memory, patch_sink=patch_sink)


def _ensure_terminator(
    daemon: Daemon,
    *,
    settings: OperatorSettings,
    memory: DaemonsMemory,
    patch_sink: PatchSink | None,
) -> None:
    if daemon.done or daemon.terminator is not None:
        return
    name = f"terminator of {daemon.task.get_name() if daemon.task is not None else daemon.handler.id}"
    daemon.terminator = asyncio.get_running_loop().create_task(
        _terminate(daemon, settings=settings, memory=memory, patch_sink=patch_sink), name=name
    )


async def _terminate(
    daemon: Daemon,
    *,
    settings: OperatorSettings,
    memory: DaemonsMemory,
    patch_sink: PatchSink | None,
) -> None:
    """Terminate one daemon in stages (see the module's docs); the stop-flag is already raised."""
    task = daemon.task
    if task is None:
        return
    loop = asyncio.get_running_loop()
    handler = daemon.handler
    title = f"{_title(handler)} {handler.id!r}"
    backoff, timeout, polling = _termination_options(handler, settings)
    since = daemon.stopper.when if daemon.stopper.when is not None else loop.time()
    try:
        if backoff is not None:
            await asyncio.wait([task], timeout=max(0.0, since + backoff - loop.time()))
        if task.done():
            return

        if timeout is None:
            while not task.done():
                await asyncio.wait([task], timeout=polling)
                if not task.done():  # worded as in the published framework
                    daemon.logger.debug(f"{title} is still exiting. The next check is in {polling} seconds.")
            return

        is_async = invocation.is_async_fn(handler.fn)
        if is_async:
            daemon.logger.debug(f"{title} is cancelled after {backoff or 0}s of graceful termination.")
            daemon.stopper.set(DaemonStoppingReason.DAEMON_CANCELLED)
            task.cancel()
        elif not daemon.stopper.reason & DaemonStoppingReason.DAEMON_CANCELLED:
            # Threads cannot be cancelled: they see it in the flag's reason (as in the published framework).
            daemon.logger.debug(f"{title} is signalled to exit by force.")
            daemon.stopper.set(DaemonStoppingReason.DAEMON_CANCELLED)
        await asyncio.wait([task], timeout=max(0.0, since + (backoff or 0) + timeout - loop.time()))
        if task.done():
            return

        daemon.abandoned = True
        daemon.stopper.set(DaemonStoppingReason.DAEMON_ABANDONED)
        message = (
            f"{title} did not exit in {(backoff or 0) + timeout}s after the stop request; "
            f"it is abandoned and left to itself (the object is released)."
        )
        daemon.logger.warning(message)
        warnings.warn(message, ResourceWarning, stacklevel=1)
        if not is_async:
            task.cancel()  # only the awaiting of the thread: the thread runs on as long as it wants.
        if patch_sink is not None and memory.stopped:
            await _touch(memory, settings=settings, patch_sink=patch_sink, logger=daemon.logger)
    finally:
        daemon.terminator = None


async def _guard(daemon: Daemon, memory: DaemonsMemory, coro: Awaitable[None]) -> None:
    """Run a daemon's or a timer's loop; forget it when it is gone; swallow only our own cancellations."""
    handler = daemon.handler
    title = f"{_title(handler)} {handler.id!r}"
    try:
        await coro
    except asyncio.CancelledError:
        reason = daemon.stopper.reason
        if not reason & (DaemonStoppingReason.DAEMON_CANCELLED | DaemonStoppingReason.DAEMON_ABANDONED):
            raise
        daemon.logger.debug(f"{title} is cancelled as requested.")
    except Exception:
        daemon.logger.exception(f"{title} has failed unexpectedly; it will not be restarted.")
        memory.exhausted.add(handler.id)
    finally:
        if memory.running.get(handler.id) is daemon:
            del memory.running[handler.id]
        if not daemon.stopper.is_set():
            daemon.stopper.set(DaemonStoppingReason.DONE)


async def _run_daemon(
    *,
    daemon: Daemon,
    memory: DaemonsMemory,
    settings: OperatorSettings,
    resource: Resource,
    memo: ephemera.AnyMemo,
    indices: Mapping[str, Any],
    patch_sink: PatchSink | None,
) -> None:
    """Call the daemon function until it exits on its own; restart it after the retriable errors."""
    handler = daemon.handler
    stopper = daemon.stopper
    body = memory.live_body
    assert body is not None
    stopped: DaemonStopped
    stopped = AsyncDaemonStopped(stopper) if invocation.is_async_fn(handler.fn) else SyncDaemonStopped(stopper)
    state = execution.HandlerState.from_scratch()
    loop = asyncio.get_running_loop()
    try:
        if handler.initial_delay is not None and handler.initial_delay > 0:
            daemon.schedule(loop.time() + handler.initial_delay, delayed=True)
            await stopper.wait_async(handler.initial_delay)

        while not stopper.is_set():
            daemon.schedule(None)
            daemon.started = loop.time()
            patch = patches.Patch(body=body)
            cause = DaemonCause(
                logger=daemon.logger,
                memo=memo,
                indices=indices,
                resource=resource,
                patch=patch,
                body=body,
                stopped=stopped,
            )
            outcome = await execution.execute_handler_once(handler=handler, state=state, cause=cause, settings=settings)
            daemon.called = loop.time()
            state = state.with_outcome(outcome)
            execution.deliver_results(outcomes={handler.id: outcome}, patch=patch)
            daemon.written = await _sink(patch, patch_sink=patch_sink, logger=daemon.logger)
            if outcome.final:
                if not stopper.is_set():
                    daemon.logger.debug(
                        f"Daemon {handler.id!r} has exited on its own and will not be retried or restarted."
                    )
                    memory.exhausted.add(handler.id)
                else:
                    daemon.logger.debug(
                        f"Daemon {handler.id!r} has exited on request and will not be retried or restarted."
                    )
                break
            daemon.schedule(loop.time() + (outcome.delay or 0), delayed=True)
            await stopper.wait_async(outcome.delay or 0)
    finally:
        daemon.schedule(None)
        await _after_stop(daemon, memory=memory, settings=settings, patch_sink=patch_sink)


async def _run_timer(
    *,
    daemon: Daemon,
    memory: DaemonsMemory,
    settings: OperatorSettings,
    resource: Resource,
    memo: ephemera.AnyMemo,
    indices: Mapping[str, Any],
    patch_sink: PatchSink | None,
) -> None:
    """Call the timer function by its schedule (interval, sharpness, idling) until stopped."""
    handler = daemon.handler
    assert isinstance(handler, TimerHandler)
    stopper = daemon.stopper
    body = memory.live_body
    assert body is not None
    loop = asyncio.get_running_loop()
    state = execution.HandlerState.from_scratch()
    phase: float | None = None  # when the first run has started: the sharp schedule keeps to it.
    stopped: DaemonStopped
    stopped = AsyncDaemonStopped(stopper) if invocation.is_async_fn(handler.fn) else SyncDaemonStopped(stopper)
    try:
        if handler.initial_delay is not None and handler.initial_delay > 0:
            daemon.schedule(loop.time() + handler.initial_delay, delayed=True)
            await stopper.wait_async(handler.initial_delay)

        while not stopper.is_set():
            # Idling: the object must be unchanged for the idle time (the changes wake us up to re-check).
            if handler.idle is not None:
                while not stopper.is_set():
                    since = memory.idle_reset_time if memory.idle_reset_time is not None else loop.time()
                    remaining = since + handler.idle - loop.time()
                    if remaining <= 0:
                        break
                    daemon.schedule(since + handler.idle, delayed=True)
                    await stopper.wait_async(remaining, wakeable=True)
                if stopper.is_set():
                    break

            daemon.schedule(None)
            started = daemon.started = loop.time()
            phase = started if phase is None else phase
            changes = memory.changes
            patch = patches.Patch(body=body)
            cause = DaemonCause(
                logger=daemon.logger,
                memo=memo,
                indices=indices,
                resource=resource,
                patch=patch,
                body=body,
                stopped=stopped,
            )  # timers get `stopped` too, as published
            outcome = await execution.execute_handler_once(handler=handler, state=state, cause=cause, settings=settings)
            execution.deliver_results(outcomes={handler.id: outcome}, patch=patch)
            daemon.written = await _sink(patch, patch_sink=patch_sink, logger=daemon.logger)
            daemon.called = loop.time()

            if not outcome.final:  # an error to retry: its delay overrides the schedule.
                state = state.with_outcome(outcome)
                daemon.schedule(loop.time() + (outcome.delay or 0), delayed=True)
                await stopper.wait_async(outcome.delay or 0)
                continue
            if outcome.exception is not None:
                daemon.logger.debug(f"Timer {handler.id!r} has failed permanently; it will not be called anymore.")
                memory.exhausted.add(handler.id)
                break
            state = execution.HandlerState.from_scratch()  # a new cycle: the retries start anew.

            if handler.interval is None:
                # No interval: the next call is only after the object changes (and idles, if needed).
                while not stopper.is_set() and memory.changes == changes:
                    await stopper.wait_async(None, wakeable=True)
                continue

            if handler.sharp:
                cycles = math.floor((loop.time() - phase) / handler.interval) + 1
                next_time = phase + cycles * handler.interval
            else:
                next_time = loop.time() + handler.interval
            daemon.schedule(next_time)
            await stopper.wait_async(max(0.0, next_time - loop.time()))
    finally:
        daemon.schedule(None)
        await _after_stop(daemon, memory=memory, settings=settings, patch_sink=patch_sink)


async def _after_stop(
    daemon: Daemon,
    *,
    memory: DaemonsMemory,
    settings: OperatorSettings,
    patch_sink: PatchSink | None,
) -> None:
    """
    When the last daemon exits while its object is being deleted, touch the object to re-check its finalizer.
    """
    if (
        patch_sink is not None
        and daemon.stopper.reason & DaemonStoppingReason.RESOURCE_DELETED
        and not daemon.abandoned
    ):  # the abandoned ones have touched the object already.
        if memory.running.get(daemon.handler.id) is daemon:
            del memory.running[daemon.handler.id]
        if memory.stopped:
            await _touch(memory, settings=settings, patch_sink=patch_sink, logger=daemon.logger)


async def _touch(
    memory: DaemonsMemory,
    *,
    settings: OperatorSettings,
    patch_sink: PatchSink,
    logger: invocation.LoggerLike,
) -> None:
    if memory.live_body is not None:
        patch = application.build_touch_patch(body=memory.live_body, settings=settings)
        await _sink(patch, patch_sink=patch_sink, logger=logger)


async def _sink(patch: patches.Patch, *, patch_sink: PatchSink | None, logger: invocation.LoggerLike) -> str | None:
    """Apply a non-empty patch; the errors are logged (a daemon or a timer must not die of them).

    Returns the resource version that the patch has made (if the sink tells it), for the observers.
    """
    if not patch or patch_sink is None:
        return None
    try:
        patched = await patch_sink(patch)
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("Failed to apply the patch of a daemon or a timer.")
        return None
    metadata = patched.get("metadata") if isinstance(patched, Mapping) else None
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    return str(version) if version is not None else None


def _title(handler: SpawningHandler) -> str:
    return "Timer" if isinstance(handler, TimerHandler) else "Daemon"


def _describe_body(body: bodies.Body) -> str:
    metadata: Mapping[str, Any] = body._src.get("metadata") or {}  # raw: faster than the views.
    namespace, name = metadata.get("namespace"), metadata.get("name")
    return f"{namespace}/{name}" if namespace else f"{name}"
