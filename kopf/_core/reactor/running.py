"""
Running the operator: the root tasks, their orchestration, and their graceful termination.

* :func:`spawn_tasks` creates the root tasks of one operator, inter-connected with
  the synchronisation primitives (the started flag, the pause toggles, the insights);
* :func:`run_tasks` waits until any of the root tasks exits (normally, they never do),
  then stops all of them gracefully, and then the tasks that were spawned meanwhile;
* :func:`operator` is the two of them together (for ``asyncio.run()`` and embedding);
* :func:`run` is the same, but synchronous (for the CLI and for the simplest embedding).

The root tasks are: the stop-flag checker (which also reacts to SIGINT/SIGTERM when
running in the main thread), the startup & cleanup activities, the authentication,
the posting of k8s-events, the liveness endpoint (if requested), the observers of the
resources & namespaces, the orchestrator of the watchers & peerings, and the killer
of the daemons & timers (on the operator's pause and exit).

The in-memory indices (``indexers``) exist from the start (empty until the watchers fill them);
the handlers of all resources wait until every indexed resource is listed & indexed once.
Nothing talks to the Kubernetes API until all the startup handlers have succeeded.

The stop & ready flags can be asyncio or ``concurrent.futures`` futures, or asyncio or
``threading`` events: the operator can be controlled from other threads this way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import functools
import logging
import os
import signal
import threading
import warnings
import weakref
from collections.abc import Collection, Coroutine, Iterable
from re import Pattern
from typing import Any, TypeAlias

from kopf._cogs.aiokits.toggles import ToggleSet
from kopf._cogs.clients import auth
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.ephemera import AnyMemo, Memo
from kopf._cogs.structs.references import Resource
from kopf._core.actions import lifecycles
from kopf._core.actions import loggers as object_loggers
from kopf._core.engines import activities, admission, daemons, indexing, peering, posting, probing
from kopf._core.intents import registries
from kopf._core.intents.causes import Activity
from kopf._core.reactor import memories as memories_
from kopf._core.reactor import observation, orchestration, processing, queueing

logger = logging.getLogger(__name__)

Flag: TypeAlias = "asyncio.Future[Any] | asyncio.Event | concurrent.futures.Future[Any] | threading.Event"

#: How long (seconds) the tasks left after the root tasks are stopped can finish by themselves (as documented).
HUNG_TASKS_TIMEOUT = 5.0

#: How often (seconds) a threading event is checked (it cannot be awaited directly).
THREADING_FLAG_POLLING = 0.1

#: The vaults of the operators by their root tasks: closed when the root tasks are finished.
_vaults: weakref.WeakKeyDictionary[asyncio.Task[None], Vault] = weakref.WeakKeyDictionary()


# -------------------------------------------------------------------------------------------------
# Flags: futures or events, asyncio or threading.
# -------------------------------------------------------------------------------------------------


async def wait_flag(flag: Flag | None) -> Any:
    """Wait until the flag is raised (forever if there is no flag)."""
    if flag is None:
        return await asyncio.Event().wait()
    elif isinstance(flag, asyncio.Future):
        return await asyncio.shield(flag)
    elif isinstance(flag, asyncio.Event):
        return await flag.wait()
    elif isinstance(flag, concurrent.futures.Future):
        return await asyncio.wrap_future(flag)
    elif isinstance(flag, threading.Event):
        while not flag.is_set():  # noqa: ASYNC110 - a threading event cannot be awaited.
            await asyncio.sleep(THREADING_FLAG_POLLING)
        return True  # as the events' own wait() returns
    else:
        raise TypeError(f"Unsupported type of a flag: {flag!r}")


def raise_flag(flag: Flag | None) -> None:
    """Raise the flag (idempotent): set the event, or resolve the future with ``None``."""
    if flag is None:
        return
    elif isinstance(flag, asyncio.Future):
        if not flag.done():
            try:
                same_loop = asyncio.get_running_loop() is flag.get_loop()
            except RuntimeError:
                same_loop = False
            if same_loop:
                flag.set_result(None)
            else:
                flag.get_loop().call_soon_threadsafe(_resolve_async_future, flag)
    elif isinstance(flag, asyncio.Event):
        flag.set()
    elif isinstance(flag, concurrent.futures.Future):
        if not flag.done():
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # resolved concurrently: fine.
                flag.set_result(None)
    elif isinstance(flag, threading.Event):
        flag.set()
    else:
        raise TypeError(f"Unsupported type of a flag: {flag!r}")


def _resolve_async_future(flag: asyncio.Future[Any]) -> None:
    if not flag.done():
        flag.set_result(None)


# -------------------------------------------------------------------------------------------------
# The public entry points.
# -------------------------------------------------------------------------------------------------


def run(
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    indexers: indexing.OperatorIndexers | None = None,
    registry: registries.OperatorRegistry | None = None,
    settings: OperatorSettings | None = None,
    memories: memories_.ResourceMemories | None = None,
    insights: observation.Insights | None = None,
    identity: str | None = None,
    standalone: bool | None = None,
    priority: int | None = None,
    peering_name: str | None = None,
    liveness_endpoint: str | None = None,
    clusterwide: bool = False,
    namespaces: Collection[str | Pattern[str]] = (),
    namespace: str | Pattern[str] | None = None,
    stop_flag: Flag | None = None,
    ready_flag: Flag | None = None,
    vault: Vault | None = None,
    memo: object | None = None,
    _command: Coroutine[None, None, None] | None = None,
) -> None:
    """
    Run the whole operator synchronously (until it exits).

    Without a loop, a new event loop is created for this call (by the current event loop
    policy) and closed at the end, as :func:`asyncio.run` does.
    """
    coro = operator(
        lifecycle=lifecycle,
        indexers=indexers,
        registry=registry,
        settings=settings,
        memories=memories,
        insights=insights,
        identity=identity,
        standalone=standalone,
        priority=priority,
        peering_name=peering_name,
        liveness_endpoint=liveness_endpoint,
        clusterwide=clusterwide,
        namespaces=namespaces,
        namespace=namespace,
        stop_flag=stop_flag,
        ready_flag=ready_flag,
        vault=vault,
        memo=memo,
        _command=_command,
    )
    try:
        if loop is not None:
            loop.run_until_complete(coro)
        else:
            asyncio.run(coro)
    except asyncio.CancelledError:
        pass


async def operator(
    *,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    indexers: indexing.OperatorIndexers | None = None,
    registry: registries.OperatorRegistry | None = None,
    settings: OperatorSettings | None = None,
    memories: memories_.ResourceMemories | None = None,
    insights: observation.Insights | None = None,
    identity: str | None = None,
    standalone: bool | None = None,
    priority: int | None = None,
    peering_name: str | None = None,
    liveness_endpoint: str | None = None,
    clusterwide: bool = False,
    namespaces: Collection[str | Pattern[str]] = (),
    namespace: str | Pattern[str] | None = None,
    stop_flag: Flag | None = None,
    ready_flag: Flag | None = None,
    vault: Vault | None = None,
    memo: object | None = None,
    _command: Coroutine[None, None, None] | None = None,
) -> None:
    """
    Run the whole operator asynchronously: :func:`spawn_tasks` and :func:`run_tasks` together.

    The tasks that exist before the operator starts are not touched when it exits.
    """
    existing_tasks = asyncio.all_tasks()
    operator_tasks = await spawn_tasks(
        lifecycle=lifecycle,
        indexers=indexers,
        registry=registry,
        settings=settings,
        memories=memories,
        insights=insights,
        identity=identity,
        standalone=standalone,
        priority=priority,
        peering_name=peering_name,
        liveness_endpoint=liveness_endpoint,
        clusterwide=clusterwide,
        namespaces=namespaces,
        namespace=namespace,
        stop_flag=stop_flag,
        ready_flag=ready_flag,
        vault=vault,
        memo=memo,
        _command=_command,
    )
    await run_tasks(operator_tasks, ignored=existing_tasks)


async def spawn_tasks(
    *,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    indexers: indexing.OperatorIndexers | None = None,
    registry: registries.OperatorRegistry | None = None,
    settings: OperatorSettings | None = None,
    memories: memories_.ResourceMemories | None = None,
    insights: observation.Insights | None = None,
    identity: str | None = None,
    standalone: bool | None = None,
    priority: int | None = None,
    peering_name: str | None = None,
    liveness_endpoint: str | None = None,
    clusterwide: bool = False,
    namespaces: Collection[str | Pattern[str]] = (),
    namespace: str | Pattern[str] | None = None,
    stop_flag: Flag | None = None,
    ready_flag: Flag | None = None,
    vault: Vault | None = None,
    memo: object | None = None,
    _command: Coroutine[None, None, None] | None = None,
) -> Collection[asyncio.Task[None]]:
    """
    Spawn all the root tasks of the operator, inter-connected with the synchronisation primitives.

    With ``_command``, only that coroutine runs (with the authentication and the stop-flag
    checker around it) instead of the operator's activities & watchers: e.g. ``kopf freeze``.
    """
    if liveness_endpoint:
        probing.parse_endpoint(liveness_endpoint)  # a bad URL fails here, not after the startup
    registry = registry if registry is not None else registries.get_default_registry()
    settings = settings if settings is not None else OperatorSettings()
    vault = vault if vault is not None else Vault()
    indexers = indexers if indexers is not None else indexing.OperatorIndexers()
    indexers.ensure(registry.indexing.get_all_handlers())
    clusterwide, patterns = _namespace_scope(clusterwide=clusterwide, namespaces=namespaces, namespace=namespace)
    _apply_peering_options(
        settings, standalone=standalone, priority=priority, peering_name=peering_name, clusterwide=clusterwide
    )

    root = _RootTasks(
        registry=registry,
        settings=settings,
        vault=vault,
        indexers=indexers,
        memo=memo if memo is not None else Memo(),
        memories=memories if memories is not None else memories_.ResourceMemories(),
        insights=insights if insights is not None else observation.Insights(),
        event_queue=posting.make_event_queue(),
    )
    signal_flag: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    root.spawn(
        _stop_flag_checker(signal_flag=signal_flag, stop_flag=stop_flag, settings=settings), name="stop-flag checker"
    )
    root.spawn(
        activities.authenticator(
            registry=registry, settings=settings, vault=vault, indices=indexers.indices, memo=root.memo
        ),
        name="credentials retriever",
        after_startup=_command is None,
    )
    root.spawn(posting.poster(event_queue=root.event_queue, settings=settings, vault=vault), name="poster of events")
    if _command is not None:
        root.spawn(_command_runner(_command, ready_flag=ready_flag, vault=vault), name="the command")
    else:
        _spawn_operator_tasks(
            root,
            lifecycle=lifecycle,
            ready_flag=ready_flag,
            liveness_endpoint=liveness_endpoint,
            identity=identity if identity is not None else peering.detect_own_id(manual=False),
            clusterwide=clusterwide,
            patterns=patterns,
        )

    for task in root.tasks:
        _vaults[task] = vault
    return root.tasks


def _namespace_scope(
    *,
    clusterwide: bool,
    namespaces: Collection[str | Pattern[str]],
    namespace: str | Pattern[str] | None,
) -> tuple[bool, list[str | Pattern[str]]]:
    """Whether the operator serves the whole cluster, and the namespaces' patterns otherwise."""
    patterns: list[str | Pattern[str]] = list(namespaces)
    if namespace is not None:
        patterns.append(namespace)
    if clusterwide and patterns:  # as in the published framework: a conflict is an error, not the whole cluster
        raise TypeError("The operator can be either cluster-wide or namespaced, not both.")
    if not clusterwide and not patterns:
        warnings.warn(
            "Neither --namespace nor --all-namespaces is specified; serving the whole cluster "
            "as with --all-namespaces.",
            FutureWarning,
            stacklevel=3,
        )  # the caller of spawn_tasks()
        clusterwide = True
    return clusterwide, patterns


def _apply_peering_options(
    settings: OperatorSettings,
    *,
    standalone: bool | None,
    priority: int | None,
    peering_name: str | None,
    clusterwide: bool,
) -> None:
    """The command line's (or the embedder's) peering options override those in the settings."""
    if standalone is not None:
        settings.peering.standalone = standalone
    if priority is not None:
        settings.peering.priority = priority
    if peering_name is not None:
        settings.peering.name = peering_name
        settings.peering.mandatory = True
    settings.peering.clusterwide = clusterwide


@dataclasses.dataclass
class _RootTasks:
    """The root tasks of one operator as they are spawned, and the state & primitives they share."""

    registry: registries.OperatorRegistry
    settings: OperatorSettings
    vault: Vault
    memo: AnyMemo
    indexers: indexing.OperatorIndexers
    memories: memories_.ResourceMemories
    insights: observation.Insights
    event_queue: posting.EventQueue
    started: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = dataclasses.field(default_factory=list)
    context: contextvars.Context = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # All tasks of the operator (and the threads of its sync handlers) see its vault and its events queue.
        self.context = contextvars.copy_context()
        self.context.run(auth.vault_var.set, self.vault)
        self.context.run(posting.event_queue_var.set, self.event_queue)
        self.context.run(object_loggers.event_sink_var.set, posting.queue_logged_event)

    def spawn(self, coro: Coroutine[Any, Any, None], *, name: str, after_startup: bool = False) -> None:
        """A root task in the operator's context; with ``after_startup``, it waits for the startup handlers."""
        if after_startup:
            coro = _after(self.started, coro)
        loop = asyncio.get_running_loop()
        self.tasks.append(loop.create_task(_guarded(coro, name=name), name=name, context=self.context))


def _spawn_operator_tasks(
    root: _RootTasks,
    *,
    lifecycle: lifecycles.LifeCycleFn | None,
    ready_flag: Flag | None,
    liveness_endpoint: str | None,
    identity: str,
    clusterwide: bool,
    patterns: Collection[str | Pattern[str]],
) -> None:
    """The tasks of the operator proper: activities, observers, watchers, daemons, webhooks, probes."""
    registry, settings, vault, memo = root.registry, root.settings, root.vault, root.memo
    indices = root.indexers.indices
    root.spawn(
        _startup_cleanup_activities(
            lifecycle=lifecycle,
            registry=registry,
            settings=settings,
            indices=indices,
            memo=memo,
            vault=vault,
            started=root.started,
            ready_flag=ready_flag,
        ),
        name="startup/cleanup activities",
    )
    if liveness_endpoint:
        root.spawn(
            probing.health_reporter(
                liveness_endpoint,
                registry=registry,
                settings=settings,
                indices=indices,
                memo=memo,
            ),
            name="health reporter",
            after_startup=True,
        )
    root.spawn(
        observation.resource_observer(
            registry=registry,
            settings=settings,
            insights=root.insights,
            vault=vault,
        ),
        name="resource observer",
        after_startup=True,
    )
    root.spawn(
        observation.namespace_observer(
            clusterwide=clusterwide,
            namespaces=patterns,
            settings=settings,
            insights=root.insights,
            vault=vault,
        ),
        name="namespace observer",
        after_startup=True,
    )
    root.spawn(
        _orchestrate(
            lifecycle=lifecycle,
            registry=registry,
            settings=settings,
            memories=root.memories,
            insights=root.insights,
            identity=identity,
            clusterwide=clusterwide,
            operator_paused=root.insights.paused,
            memo=memo,
            vault=vault,
            event_queue=root.event_queue,
            indexers=root.indexers,
        ),
        name="orchestrator",
        after_startup=True,
    )
    root.spawn(
        daemons.daemon_killer(
            settings=settings,
            memories=functools.partial(_daemons_memories, root.memories),
            operator_paused=root.insights.paused,
        ),
        name="daemon killer",
    )
    if registry.webhooks.get_all_handlers():
        root.spawn(
            admission.admission_webhook_server(
                registry=registry,
                settings=settings,
                insights=root.insights,
                memories=root.memories,
                memobase=memo,
                indices=indices,
                vault=vault,
            ),
            name="admission webhook server",
            after_startup=True,
        )


async def run_tasks(
    root_tasks: Collection[asyncio.Task[Any]],
    *,
    ignored: Collection[asyncio.Task[Any]] = frozenset(),
    return_when: str = asyncio.FIRST_COMPLETED,
) -> None:
    """
    Orchestrate the root tasks: once any of them exits, stop all others gracefully.

    ``return_when=asyncio.FIRST_COMPLETED`` says so explicitly (the documented way to call it when
    orchestrating the tasks by hand); no other value makes sense for the root tasks, so none is accepted.

    The tasks spawned meanwhile and still running after the root tasks are stopped ("hung")
    get a little time to finish by themselves, and are cancelled after that. The tasks
    that existed before the operator (``ignored``) are not touched. The first error of
    the root tasks is re-raised (the errors of the stopping are only logged).
    """
    if return_when != asyncio.FIRST_COMPLETED:
        raise ValueError(
            f"The root tasks are stopped when the first of them exits: return_when must be "
            f"asyncio.FIRST_COMPLETED, got {return_when!r}."
        )
    root_tasks = list(root_tasks)
    if not root_tasks:
        return
    cancelled_from_outside = False
    try:
        await asyncio.wait(root_tasks, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        cancelled_from_outside = True

    # The "... are stopped" lines are worded as in the published framework: the operators' tests wait for them.
    try:
        await _stop_tasks_shielded(root_tasks)
        why = "cancelled from outside" if cancelled_from_outside else "finishing normally"
        logger.debug(f"Root tasks are stopped: {why}; tasks left: {set()!r}")
        current = asyncio.current_task()
        hung = [
            task
            for task in asyncio.all_tasks()
            if task is not current and task not in ignored and task not in root_tasks and not task.done()
        ]
        if hung:
            _, still_hung = await asyncio.wait(hung, timeout=HUNG_TASKS_TIMEOUT)
            if still_hung:
                logger.debug(f"Cancelling the hung tasks: {sorted(task.get_name() for task in still_hung)}")
                await _stop_tasks_shielded(list(still_hung))
            logger.debug(f"Hung tasks are stopped: {why}; tasks left: {set()!r}")
        else:
            logger.debug("Hung tasks stopping is skipped: no tasks given.")
    finally:
        for vault in {id(vault): vault for task in root_tasks if (vault := _vaults.get(task)) is not None}.values():
            await vault.close()

    if cancelled_from_outside:
        raise asyncio.CancelledError()
    _reraise(root_tasks)


async def _stop_tasks_shielded(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel the tasks and wait for them, even if the waiting itself is cancelled (it continues)."""
    for task in tasks:
        if not task.done():
            task.cancel()
    pending = [task for task in tasks if not task.done()]
    while pending:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            for task in pending:
                task.cancel()
        pending = [task for task in pending if not task.done()]


def _reraise(root_tasks: Iterable[asyncio.Task[Any]]) -> None:
    for task in root_tasks:
        if task.done() and not task.cancelled():
            exc = task.exception()
            if exc is not None:
                raise exc


# -------------------------------------------------------------------------------------------------
# The root tasks.
# -------------------------------------------------------------------------------------------------


async def _guarded(coro: Coroutine[Any, Any, None], *, name: str) -> None:
    """Run a root task; log its unexpected errors (they stop the operator anyway)."""
    try:
        await coro
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception(f"Root task {name!r} has failed with an exception. The operator will stop.")
        raise
    else:
        logger.debug(f"Root task {name!r} has exited.")


async def _after(flag: asyncio.Event, coro: Coroutine[Any, Any, None]) -> None:
    """Run the coroutine only after the flag is set (e.g. after the startup)."""
    try:
        await flag.wait()
    except BaseException:
        coro.close()
        raise
    await coro


#: Whether the operator takes SIGINT/SIGTERM (in the main thread) as its stop signal. An embedder that
#: owns the process's signals, such as a test runner whose Ctrl+C must interrupt the tests, turns it off.
os_signals_var: contextvars.ContextVar[bool] = contextvars.ContextVar("kopf_os_signals", default=True)


async def _stop_flag_checker(
    *,
    signal_flag: asyncio.Future[Any],
    stop_flag: Flag | None,
    settings: OperatorSettings,
) -> None:
    """Exit when the stop-flag is raised or a termination signal arrives (in the main thread only)."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    installed = False
    if os_signals_var.get() and threading.current_thread() is not threading.main_thread():
        logger.warning("OS signals are ignored: running not in the main thread.")  # as the published framework
    elif os_signals_var.get():
        try:
            for signum in signals:
                loop.add_signal_handler(signum, _on_signal, signal_flag, signum, settings)
            installed = True
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # e.g. non-Unix loops, or loops not in the main interpreter.
    waiters: list[asyncio.Future[Any]] = [signal_flag]
    if stop_flag is not None:
        waiters.append(asyncio.ensure_future(wait_flag(stop_flag)))
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if signal_flag.done():
            logger.info(f"Signal {signal.Signals(signal_flag.result()).name} is received. Operator is stopping.")
        else:  # worded as in the published framework: the flag's value (True for the events, a future's result)
            logger.info(f"Stop-flag is set to {waiters[1].result()!r}. Operator is stopping.")
    finally:
        for waiter in waiters[1:]:
            waiter.cancel()
        if installed:
            for signum in signals:
                loop.remove_signal_handler(signum)


def _on_signal(signal_flag: asyncio.Future[Any], signum: int, settings: OperatorSettings) -> None:
    if signal_flag.done():
        return
    signal_flag.set_result(signum)
    timeout = settings.process.ultimate_exiting_timeout
    if timeout is not None:
        # If the graceful exit takes too long, exit anyway (the OS closes everything).
        timer = threading.Timer(timeout, _ultimate_termination)
        timer.daemon = True
        timer.start()


def _ultimate_termination() -> None:
    logger.warning("The operator has not exited in time after the termination signal. Killing it.")
    os.kill(os.getpid(), signal.SIGKILL)


async def _startup_cleanup_activities(
    *,
    lifecycle: lifecycles.LifeCycleFn | None,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    indices: indexing.OperatorIndices,
    memo: AnyMemo,
    vault: Vault,
    started: asyncio.Event,
    ready_flag: Flag | None,
) -> None:
    """Run the startup handlers, let the operator go; on exit, run the cleanup handlers."""
    try:
        await activities.run_activity(
            lifecycle=lifecycle,
            registry=registry,
            settings=settings,
            activity=Activity.STARTUP,
            indices=indices,
            memo=memo,
        )
    except activities.ActivityError as e:
        logger.error(f"Startup has failed: {e}")
        raise
    started.set()
    await vault.wait_for_readiness()
    raise_flag(ready_flag)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        try:
            await activities.run_activity(
                lifecycle=lifecycle,
                registry=registry,
                settings=settings,
                activity=Activity.CLEANUP,
                indices=indices,
                memo=memo,
            )
        except activities.ActivityError as e:
            logger.error(f"Cleanup has failed: {e}")
        raise


async def _command_runner(
    command: Coroutine[None, None, None],
    *,
    ready_flag: Flag | None,
    vault: Vault,
) -> None:
    raise_flag(ready_flag)
    await command


def _needs_whole_bodies(registry: registries.OperatorRegistry, resource: Resource) -> bool:
    """
    Whether the objects gone while a watch-stream was broken must come with their last seen bodies whole.

    Only the event-watching handlers (the ``DELETED`` event's body) and the indexers (the body's values)
    read more of a gone object than what identifies it; the rest only end what is kept for it (its worker,
    memory, daemons). Decided when the resource's watcher starts (by the handlers registered by then).
    """
    return registry.watching.has_handlers(resource) or registry.indexing.has_handlers(resource)


def _daemons_memories(memories: memories_.ResourceMemories) -> list[daemons.DaemonsMemory]:
    """The daemons & timers of all objects known now (kept in the objects' memories by the processing)."""
    return [
        daemons_memory
        for memory in memories.iter_all_memories()
        if isinstance(daemons_memory := memory.extras.get("daemons"), daemons.DaemonsMemory)
    ]


async def _orchestrate(
    *,
    lifecycle: lifecycles.LifeCycleFn | None,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    memories: memories_.ResourceMemories,
    insights: observation.Insights,
    identity: str,
    clusterwide: bool,
    operator_paused: ToggleSet,
    memo: AnyMemo,
    vault: Vault,
    event_queue: posting.EventQueue,
    indexers: indexing.OperatorIndexers,
) -> None:
    """Spawn & stop the watchers (and peerings) as the resources & namespaces come and go."""

    def spawn_watcher(dimension: tuple[Resource, str | None]) -> Coroutine[Any, Any, None]:
        # Synchronously, before any watcher task runs: the handlers must not start before the indices are full.
        indexed = registry.indexing.has_handlers(dimension[0])
        if indexed:
            indexers.expect(dimension)
        return _watch(dimension, indexed=indexed)

    async def _watch(dimension: tuple[Resource, str | None], *, indexed: bool) -> None:
        resource, namespace = dimension
        processor = functools.partial(
            processing.process_resource_event,
            resource=resource,
            registry=registry,
            settings=settings,
            memories=memories,
            memo=memo,
            vault=vault,
            indexers=indexers,
            operator_paused=operator_paused,
        )
        preprocessor = (
            functools.partial(
                processing.index_resource_event,
                resource=resource,
                registry=registry,
                settings=settings,
                memories=memories,
                memo=memo,
                indexers=indexers,
            )
            if indexed
            else None
        )
        on_listed = functools.partial(indexers.mark_populated, dimension) if indexed else None
        try:
            await queueing.watcher(
                namespace=namespace,
                resource=resource,
                settings=settings,
                processor=processor,
                operator_paused=operator_paused,
                vault=vault,
                preprocessor=preprocessor,
                on_listed=on_listed,
                whole_bodies=_needs_whole_bodies(registry, resource),
            )
        finally:
            # A stopped (or failed) watcher must not block the others' handlers forever; a re-spawned one re-expects.
            if indexed:
                indexers.mark_populated(dimension)

    async def spawn_peering(namespace: str | None) -> None:
        await peering.run_peering(
            settings=settings,
            identity=identity,
            namespace=namespace,
            clusterwide=clusterwide,
            operator_paused=operator_paused,
            vault=vault,
        )

    # The settings could have been changed by the startup handlers: decide only now.
    await orchestration.orchestrator(
        insights=insights,
        spawn_watcher=spawn_watcher,
        spawn_peering=None if settings.peering.standalone else spawn_peering,
        clusterwide=clusterwide,
    )
