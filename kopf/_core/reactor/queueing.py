"""
Per-object queueing of the watch-events: one watch-stream per resource & namespace,
one queue and one worker per object.

The watcher reads the resource's watch-stream and routes every event to the queue
of its object (by the uid; by the namespace & name if there is no uid). The worker
of the object (started on demand, in turns under load: see ``_dispatcher``) processes
the object's events one at a time, in order; so the events of one object never overtake
each other, while the objects are processed concurrently (up to ``settings.batching.worker_limit``
at a time).

The worker processes a lone event at once; the events that arrive while it is busy are batched:
only the latest one is processed, since only the latest state of the object matters. If three or more
have superseded each other meanwhile (a burst), the worker waits for ``settings.batching.batch_window``
seconds after each further event before it processes the latest one.
Every new event also sets the object's "stream pressure" flag, so that a processor
sleeping out a delay (e.g. of a handler's retry) wakes up and yields to the new event.

Before routing, every event can be pre-processed right in the watcher (``preprocessor``), in the order
of the stream and regardless of the workers and their limit: e.g. indexed in memory. Once the initial
listing is over (and so pre-processed), ``on_listed`` is called (e.g. the indices are populated).
The pre-processing must never wait for the workers, else it would deadlock with them.

A worker exits as soon as its object has no events left. The object's queue stays for
``settings.batching.idle_timeout`` seconds: its next events (e.g. the echoes of its own patches) go to a new
worker at once, as to the object in work that it still is; after that, the object is forgotten, and its next
event waits for its turn as a new object's does. An idle object costs its queue (~0.3 KB), not a task with its
coroutines and timer (~2 KB: thousands of them idle at once under load). The unexpected errors of the processing
are logged and throttled per object (``settings.batching.error_delays``): they never
stop the watcher; after the throttling, the failed event is processed again (unless
newer events of the object have arrived), so a failed write of the framework is retried.
On exit (cancellation, or the end of the stream), the workers are allowed to finish
their current processing for ``settings.batching.exit_timeout`` seconds, and are cancelled
after that. No tasks are left behind.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import enum
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator

from kopf._cogs.aiokits.aiopriority import Turn
from kopf._cogs.clients import auth, fetching, watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import Body, RawEvent
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource
from kopf._core.actions import loggers
from kopf._core.reactor.memories import get_memory_key

logger = logging.getLogger(__name__)

#: How many objects of a listing are routed per cycle of the event loop. One per cycle made a listing of
#: 10,000 objects last for most of a busy run, and the watch-stream began only after it, too late (see
#: docs/performance.md); all of them at once held the first objects' work back until all were routed.
LISTED_PER_CYCLE = 256


#: What processes one event of one object (e.g. a partial of ``process_resource_event``):
#: called as ``await processor(raw_event=..., stream_pressure=...)``.
ObjectProcessor = Callable[..., Awaitable[None]]

#: What pre-processes every event in the watcher, before routing it to the worker (e.g. the indexing):
#: called as ``await preprocessor(raw_event=...)``.
ObjectPreprocessor = Callable[..., Awaitable[None]]


class _EndOfStream(enum.Enum):
    """A marker in the objects' queues: no more events will come, the worker must exit."""

    EOS = enum.auto()


EOS = _EndOfStream.EOS

QueueItem = RawEvent | _EndOfStream


class Backlog:
    """
    The queue of one object's events, for its only consumer (the object's worker).

    Lighter than :class:`asyncio.Queue` (four deques and an event, ~3 KB per object): a list and,
    only while the worker waits, a future. The objects are many, and their queues are short.

    Only the newest of the waiting events is kept: the worker would take them all at once and process
    only the latest one anyway (see :func:`_batch`); so a busy object's older events (their bodies)
    are dropped when a newer one arrives, not when the worker comes to them; ``dropped`` counts them
    (a burst: see :func:`_batch`) until the worker resets it.
    """

    __slots__ = ("_items", "_waiter", "dropped")

    def __init__(self) -> None:
        self._items: list[QueueItem] = []
        self._waiter: asyncio.Future[None] | None = None
        self.dropped = 0

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, item: QueueItem) -> None:
        items = self._items
        if items and item is not EOS and items[-1] is not EOS:
            items[-1] = item  # only the latest event matters (an end-of-stream stays the last)
            self.dropped += 1
        else:
            items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def get_nowait(self) -> QueueItem:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.pop(0)

    async def get(self) -> QueueItem:
        while not self._items:  # if cancelled after the wake-up, the item stays for the next get()
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.pop(0)


class Pressure:
    """
    The flag of new events arriving while the object is processed: ``is_set()``, ``set()``, ``clear()``, ``wait()``.

    As :class:`asyncio.Event` does it, but without its waiters' deque (~0.7 KB per object for the worker's
    lifetime): the futures are made only while someone waits, which is rare (a processor sleeping out a delay).
    """

    __slots__ = ("_flag", "_waiters")

    def __init__(self) -> None:
        self._flag = False
        self._waiters: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        self._flag = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self._flag = False

    async def wait(self) -> bool:
        if self._flag:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)
        return True


@dataclasses.dataclass(slots=True)
class Stream:
    """
    The queue of one object's events, and the flag of new events arriving while processing.

    ``idle_until``: the loop time until which an object with no worker stays known (see the module's docs);
    ``None`` while it has a worker, or while it waits for its first one. ``throttler``: after errors only.
    """

    backlog: Backlog = dataclasses.field(default_factory=Backlog)
    pressure: Pressure = dataclasses.field(default_factory=Pressure)
    worker: asyncio.Task[None] | None = None
    idle_until: float | None = None
    throttler: _Throttler | None = None


class Streams(dict[str, Stream]):
    """
    The streams of one watcher's objects, and the flag of the watcher's exit (one for all of them).

    The new streams wait for their workers in order (``waiting``): see :func:`_dispatcher`. The idle ones
    (no events left, no worker) are forgotten in the order they went idle (``idle``), by one timer for all.
    """

    def __init__(
        self,
        *,
        processor: ObjectProcessor,
        settings: OperatorSettings,
        limiter: asyncio.Semaphore | None,
    ) -> None:
        super().__init__()
        self.exiting = asyncio.Event()
        self.waiting: collections.deque[str] = collections.deque()
        self.arrived = Pressure()  # new streams are waiting
        self.idle: collections.deque[tuple[float, str]] = collections.deque()
        self._sweeper: asyncio.TimerHandle | None = None
        self._processor = processor
        self._settings = settings
        self._limiter = limiter

    def start_worker(self, key: str, stream: Stream, turns: list[Turn], order: int | None) -> None:
        """A worker for the stream: its first processing in ``turns`` & ``order`` (none for a woken idle one)."""
        stream.worker = asyncio.create_task(
            _worker(
                key=key,
                stream=stream,
                streams=self,
                processor=self._processor,
                settings=self._settings,
                limiter=self._limiter,
                turns=turns,
                order=order,
            ),
            name=f"kopf worker for {key}",
        )

    def rest(self, key: str, stream: Stream) -> None:
        """The stream's worker exits: keep the stream for the idle timeout, for the object's next events."""
        loop = asyncio.get_running_loop()
        timeout = self._settings.batching.idle_timeout
        stream.worker = None
        if timeout is None:  # never forgotten while the watcher runs (as a worker waiting forever was)
            stream.idle_until = math.inf
            return
        stream.idle_until = until = loop.time() + timeout
        self.idle.append((until, key))
        if self._sweeper is None:
            self._sweeper = loop.call_at(until, self._sweep)

    def wake(self, key: str, stream: Stream) -> None:
        """An event for an idle stream: a worker at once (no turn to wait for: the object is still in work)."""
        stream.idle_until = None
        self.start_worker(key, stream, [], None)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    def _sweep(self) -> None:
        self._sweeper = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        idle = self.idle
        while idle and idle[0][0] <= now:
            until, key = idle.popleft()
            stream = self.get(key)  # unless it has woken up since then (and maybe rested again: a later entry)
            if stream is not None and stream.idle_until == until:
                del self[key]
        if idle:
            self._sweeper = loop.call_at(idle[0][0], self._sweep)


async def watcher(
    *,
    namespace: str | None,
    resource: Resource,
    settings: OperatorSettings,
    processor: ObjectProcessor,
    operator_paused: watching.PauseFlag | None = None,
    label_selector: fetching.LabelSelector | None = None,
    vault: Vault | None = None,
    stop: asyncio.Event | None = None,
    preprocessor: ObjectPreprocessor | None = None,
    on_listed: Callable[[], None] | None = None,
    whole_bodies: bool = True,
) -> None:
    """
    Watch the resource (in the namespace, or cluster-wide if ``None``) and process its objects' events.

    Runs until cancelled (or until ``stop`` is set); the workers are stopped on exit.
    While the operator is paused, no new events arrive (the watch-stream is paused),
    but the workers finish what they have already got.
    ``preprocessor`` & ``on_listed``: see the module's docs (their errors are logged, never fatal).
    ``whole_bodies``: whether the objects gone while the watch-stream was broken come with their last seen
    bodies whole, or only with what identifies them (see :class:`kopf._cogs.clients.watching.WatchState`).
    """
    limiter = _make_limiter(settings.batching.worker_limit)
    streams = Streams(processor=processor, settings=settings, limiter=limiter)
    listed = 0
    dispatcher = asyncio.create_task(
        _dispatcher(streams=streams, vault=vault),
        name=f"kopf dispatcher for {resource}",
    )
    try:
        stream = watching.infinite_watch(
            resource=resource,
            namespace=namespace,
            settings=settings,
            label_selector=label_selector,
            stop=stop,
            operator_paused=operator_paused,
            vault=vault,
            markers=on_listed is not None,
            whole_bodies=whole_bodies,
        )
        async with contextlib.aclosing(stream):
            async for raw_event in stream:
                if isinstance(raw_event, watching.Bookmark):
                    if raw_event is watching.Bookmark.LISTED and on_listed is not None:
                        on_listed()
                    continue
                if preprocessor is not None:
                    try:
                        await preprocessor(raw_event=raw_event)
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        logger.exception(f"Pre-processing of {_describe(raw_event)} has failed unexpectedly.")
                _route(raw_event, streams=streams)
                if raw_event["type"] is None:
                    listed += 1
                    if listed % LISTED_PER_CYCLE == 1:  # the first ones go to work while the others are routed
                        await asyncio.sleep(0)
    finally:
        dispatcher.cancel()
        await asyncio.gather(dispatcher, return_exceptions=True)
        streams.close()
        await _shutdown(streams, settings=settings)


def _make_limiter(worker_limit: int | None) -> asyncio.Semaphore | None:
    if worker_limit is None:
        return None
    if worker_limit < 1:
        raise ValueError(f"settings.batching.worker_limit must be positive or None, got {worker_limit!r}.")
    return asyncio.Semaphore(worker_limit)


def _route(raw_event: RawEvent, *, streams: Streams) -> None:
    """
    Put the event into its object's queue.

    A new object's stream waits for its worker (see _dispatcher); an idle one gets a worker at once.
    """
    key = get_memory_key(raw_event["object"])
    stream = streams.get(key)
    if stream is None:
        stream = streams[key] = Stream()
        streams.waiting.append(key)
        streams.arrived.set()
    stream.backlog.put_nowait(raw_event)
    stream.pressure.set()
    if stream.idle_until is not None:
        streams.wake(key, stream)


async def _dispatcher(*, streams: Streams, vault: Vault | None = None) -> None:
    """
    Start the workers of the new streams in the order they came, each in its turn (see ``auth.take_turn()``).

    Under load (e.g. 10,000 objects listed at once), a new object waits here with only its event, without
    a worker: its work would only queue its requests behind the others' and hold its state meanwhile.
    The watch-stream goes on meanwhile: the events of a waiting object replace its waiting one; the
    events of the objects in work go to their workers at once (e.g. the echoes of their own patches).
    """
    while True:
        while not streams.waiting:
            streams.arrived.clear()
            await streams.arrived.wait()
        key = streams.waiting.popleft()
        stream = streams.get(key)
        if stream is None or stream.worker is not None:
            continue
        order = auth.next_order()
        turns = await auth.take_turn(order, vault=vault)
        streams.start_worker(key, stream, turns, order)


async def _worker(
    *,
    key: str,
    stream: Stream,
    streams: Streams,
    processor: ObjectProcessor,
    settings: OperatorSettings,
    limiter: asyncio.Semaphore | None,
    turns: list[Turn],
    order: int | None,
) -> None:
    """
    Process the events of one object, one at a time (the latest of each batch); exit once there are none.

    The first processing of a new object is in the ``turns`` taken for it, and its requests go in its
    ``order``; the next ones (and those of a woken idle object) get the next orders when they begin.
    """
    backlog = stream.backlog
    backlog.dropped = 0  # those superseded while the object waited for its worker (its turn): not a burst
    first_order = order
    try:
        while True:
            # No events left: exit; the stream stays known for a while (no awaits from the check to the rest:
            # no new events can sneak in; those after it wake the stream with a new worker).
            if backlog.empty():
                streams.rest(key, stream)
                break
            item = backlog.get_nowait()
            if item is EOS:
                break

            # Batch the events that come in quick succession: only the latest one matters.
            raw_event, eos = await _batch(backlog, item, window=settings.batching.batch_window)

            stream.pressure.clear()
            current_order, first_order = (first_order if first_order is not None else auth.next_order()), None
            token = auth.request_order.set(current_order)  # its requests go before those of later objects
            try:
                if limiter is not None:
                    async with limiter:
                        await processor(raw_event=raw_event, stream_pressure=stream.pressure)
                else:
                    await processor(raw_event=raw_event, stream_pressure=stream.pressure)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                # Worded as in the published framework, in the object's log: the operators' tests wait for it.
                if stream.throttler is None:  # kept with the stream: its worker may exit before the next error
                    stream.throttler = _Throttler(settings.batching.error_delays)
                delay = stream.throttler.next_delay()
                object_logger = _object_logger(raw_event, settings)
                if delay is None:
                    object_logger.exception(f"Processing has failed with an unexpected error: {e!r}")
                else:
                    object_logger.exception(f"Throttling for {delay} seconds due to an unexpected error: {e!r}")
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(delay):
                            await streams.exiting.wait()
                    eos = eos or streams.exiting.is_set()
                    if not eos:
                        object_logger.info("Throttling is over. Switching back to normal operations.")
                # Nothing is lost on errors (e.g. of the framework's own patches: 409, or 5xx beyond the
                # client's retries): unless newer events have come meanwhile, the same one is processed again
                # after the throttling (never at once: with no throttling delays, that would spin).
                if not eos and delay is not None and backlog.empty():
                    backlog.put_nowait(raw_event)
            else:
                stream.throttler = None
            finally:
                auth.request_order.reset(token)
                for turn in turns:
                    turn.end()
                turns = []

            if eos:
                break
    finally:
        for turn in turns:  # if exiting before the first processing
            turn.end()
        if stream.idle_until is None and streams.get(key) is stream:  # not resting: gone for good
            del streams[key]


def _object_logger(raw_event: RawEvent, settings: OperatorSettings) -> loggers.ObjectLogger:
    """The object's logger for the framework's own errors: to the log only, not posted as k8s-events (as published)."""
    return loggers.LocalObjectLogger(body=Body(raw_event["object"]), settings=settings)


#: How many events superseded by newer ones while waiting make a burst (see :func:`_batch`): more than the
#: echoes of a processing's own two patches (the status, then the rest), which come while it ends.
BURST_DROPS = 2


async def _batch(
    backlog: Backlog,
    item: RawEvent,
    *,
    window: float,
) -> tuple[RawEvent, bool]:
    """
    Take the latest event; if it came in a burst, wait out the burst for the window after each event.

    A lone event is processed at once (as in the published framework: no latency is added to it); so is
    the latest of the events that came while the previous one was processed, e.g. the echoes of the
    framework's own two patches (the status, then the rest) and a user's write. Only a burst, i.e. at least
    three events superseding each other while waiting, waits for ``window`` seconds after its last event.
    """
    latest = item
    burst = backlog.dropped >= BURST_DROPS
    while burst and window > 0:
        more: QueueItem
        try:
            async with asyncio.timeout(window):
                more = await backlog.get()
        except TimeoutError:
            break
        if more is EOS:
            return latest, True
        latest = more
    while not backlog.empty():  # what is queued already (e.g. the end of the stream; or all, with no window)
        more = backlog.get_nowait()
        if more is EOS:
            return latest, True
        latest = more
    backlog.dropped = 0
    return latest, False


def _describe(raw_event: RawEvent) -> str:
    metadata = raw_event["object"].get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name")
    return f"{namespace}/{name}" if namespace else f"{name}"


class _Throttler:
    """The delays after consecutive errors: the next one per error, the last one repeating; reset on success."""

    def __init__(self, delays: Iterable[float]) -> None:
        self._delays = delays
        self._iter: Iterator[float] | None = None
        self._last: float | None = None

    def next_delay(self) -> float | None:
        if self._iter is None:
            self._iter = iter(self._delays)
        self._last = next(self._iter, self._last)
        return self._last

    def reset(self) -> None:
        self._iter = None
        self._last = None


async def _shutdown(streams: Streams, *, settings: OperatorSettings) -> None:
    """Ask all workers to exit after their current processing; cancel those that are too slow."""
    streams.exiting.set()
    for stream in list(streams.values()):
        stream.backlog.put_nowait(EOS)
        stream.pressure.set()  # wake up those sleeping out the delays: they'll continue after a restart.
    workers = [stream.worker for stream in streams.values() if stream.worker is not None]
    if not workers:
        return
    try:
        timeout = settings.batching.exit_timeout
        if timeout is None or timeout > 0:
            await asyncio.wait(workers, timeout=timeout)
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for worker in workers:  # retrieve & log the unexpected errors (the expected ones are caught inside).
            if worker.done() and not worker.cancelled() and worker.exception() is not None:
                logger.error(f"A worker has failed unexpectedly: {worker.exception()!r}")
