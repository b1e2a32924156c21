"""The ``kopf_operator`` fixture's object: an operator under test, in-process, in the test's own loop.

The operator runs as a task of the test's loop (virtual time in sim mode), against
``kopf_cluster``: in sim mode through the in-memory transport (a pre-populated vault; the
admission webhooks served in-process by the simulated apiserver), in real mode with the
kubeconfig context's credentials (and the operator's own webhook settings).

:class:`KopfOperator` starts, stops, restarts and crashes it; the rest is done by its parts, a module each:
loading its files afresh at every start (:mod:`pytest_kopf._loading`), telling its tasks from the test's
(:mod:`pytest_kopf._operator_tasks`), keeping its logs (:mod:`pytest_kopf._logcapture`), its way to the API
that a crash cuts (:mod:`pytest_kopf._lifeline`), and what it leaves behind after a stop or a crash
(:mod:`pytest_kopf._leaks`: the tasks and threads left fail the test with :class:`KopfLeakError`, by name).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import logging
import os
import threading
import types
from collections.abc import Collection, Iterable, Sequence
from re import Pattern
from typing import Any

import kopf
from kopf import ConnectionInfo
from kopf._kits.testing import (
    Activity,
    Insights,
    ResourceMemories,
    Vault,
    handles_os_signals,
    pin_utcnow_to_loop,
    set_sync_event_waiter,
)
from kopf_sim.timing.virtualtime import VirtualTimeLoop, describe_tasks

from . import _routing as routing
from ._admission import InProcessWebhookServer, SimAdmissionSettings
from ._clientconfig import refresh_active
from ._clocks import wait_event
from ._leaks import THREADS_GRACE, abandon_jobs, describe_leaked_threads, jobs_done, leaked_threads
from ._lifeline import Lifeline
from ._loading import OperatorFiles, one_line
from ._logcapture import LogCapture
from ._operator_tasks import NotOurs, OperatorTasks, coro_name, owner_var
from ._readiness import RequestObserver, wait_until_ready
from ._realcluster import RealKopfCluster
from ._threads import LentThreadsExecutor
from ._tracing import tagging_handlers
from .cluster import KopfCluster, SimKopfCluster
from .errors import KopfLeakError, KopfOperatorError, KopfResourceError, KopfTimeoutError

__all__ = ["KopfOperator"]

#: Virtual seconds in sim mode (real ones in real mode) for the operator to get ready or to stop.
DEFAULT_START_TIMEOUT = 60.0
DEFAULT_STOP_TIMEOUT = 60.0
#: How often a graceful stop looks again whether its sync handlers' jobs are done (virtual seconds): a job's end is
#: told to the loop by a thread-safe call, which may come only after the loop has moved its time on (a job whose
#: waiter was cancelled by kopf's stop holds the time no more once its function has returned).
JOBS_POLLING = 1.0
#: The exit code of an operator killed by crash() (as of a process killed by SIGKILL).
CRASH_EXIT_CODE = 137
#: How many times the tasks of a crashed operator are cancelled (a virtual second apart) before they are left.
CRASH_CANCELLATIONS = 5

_counter = itertools.count(1)

# kopf's sync waits (a sync daemon's ``stopped.wait(t)``) are idle waits in virtual time (real ones elsewhere).
set_sync_event_waiter(wait_event)


class KopfOperator:
    """An operator under test: ``start()``, ``stop()``, ``restart()``, its logs and its exit state.

    Usage (the fixture stops it at the end of the test if the test has not)::

        await kopf_operator.start(paths=["operator.py"])
        ...
        await kopf_operator.stop()
        assert kopf_operator.exception is None

    It is an async context manager too: ``async with kopf_operator:`` stops it on exit (and, if it
    is not running but was started before, starts it again with the same arguments on entry).
    The exit state: :attr:`exception` (the operator's crash, or None) and :attr:`exit_code`
    (None while running or never started, 0 after a clean stop, 1 after a crash).
    """

    #: The loop of the test (set by the fixture): the operator starts only there.
    test_loop: asyncio.AbstractEventLoop | None = None

    def __init__(self, cluster: KopfCluster, *, reuse_threads: bool = True) -> None:
        self.cluster = cluster
        self.reuse_threads = reuse_threads  # fresh settings get an executor on the session's threads
        self.records: list[logging.LogRecord] = []
        #: The operator's crash, or None.
        self.exception: BaseException | None = None
        #: None while running or never started, 0 after a clean stop, 1 after a crash.
        self.exit_code: int | None = None
        self.registry: kopf.OperatorRegistry | None = None
        self.settings: kopf.OperatorSettings | None = None
        self.memo: Any = None
        #: What the running operator remembers of its objects (its daemons & timers, its delayed handlers).
        self.memories: ResourceMemories | None = None
        self._start_kwargs: dict[str, Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop_flag: asyncio.Event | None = None
        self._capture = LogCapture(self.records)
        self._files = OperatorFiles()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks = OperatorTasks(self)
        self._threads_before: set[threading.Thread] = set()
        self._admission: SimAdmissionSettings | None = None
        self._lifeline: Lifeline | None = None
        self._burial: asyncio.Task[None] | None = None
        self._restarting: asyncio.Lock | None = None
        self.crashes = 0  # how many times crash() has killed it

    # -- state -------------------------------------------------------------------------------------

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop that the operator runs in (or has run in last); None if never started."""
        return self._loop

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def modules(self) -> dict[str, types.ModuleType]:
        """The modules loaded by the last start, by the path or name they were given as."""
        return self._files.modules

    @property
    def module(self) -> types.ModuleType:
        """The module of the operator's file (or module) as loaded by the last start: ``kopf_operator.module.MyError``.

        Every start loads the files afresh under a new module name, so a class that the test imports from the
        same file (``from example import MyError``) is another class than the one the handlers raise; take the
        loaded one from here instead. With several files or modules, see :attr:`modules` (by path or name).
        """
        if not self.modules:
            raise KopfOperatorError("No operator file or module is loaded (start it with paths=… or modules=…).")
        if len(self.modules) > 1:
            raise KopfOperatorError(
                f"Several files or modules are loaded: take one from kopf_operator.modules "
                f"({', '.join(repr(key) for key in self.modules)})."
            )
        return next(iter(self.modules.values()))

    @property
    def logs(self) -> str:
        """The captured log lines of the operator so far (all its runs): ``LEVEL logger: message``."""
        return self._capture.text

    def clear_logs(self) -> None:
        self.records.clear()

    # -- starting ----------------------------------------------------------------------------------

    def pending_tasks(self) -> list[asyncio.Task[Any]]:
        """The operator's tasks that have not finished yet (e.g. its daemons and timers after a stop)."""
        return self._tasks.pending()

    async def start(
        self,
        *,
        paths: Iterable[str | os.PathLike[str]] = (),
        modules: Iterable[str] = (),
        registry: kopf.OperatorRegistry | None = None,
        settings: kopf.OperatorSettings | None = None,
        namespaces: Collection[str | Pattern[str]] = (),
        clusterwide: bool = False,
        memo: Any = None,
        log_level: int = logging.INFO,
        check_resources: bool = True,
        timeout: float = DEFAULT_START_TIMEOUT,
    ) -> None:
        """Load the handlers, start the operator, and wait until it is ready (or fail with its error).

        Without ``namespaces``, the operator serves the whole cluster (``clusterwide``).
        The ``kopf`` loggers are captured from ``log_level`` up (INFO by default: kopf's DEBUG lines dump
        whole objects, which costs time in every test; pass ``logging.DEBUG`` to see them).
        With ``check_resources`` (the default), the handlers' resources must be served by the
        cluster when the operator starts (apply the CRDs first); otherwise
        :class:`~pytest_kopf.errors.KopfResourceError` names the handlers and their resources.
        """
        if self.running:
            raise KopfOperatorError("The operator is already running; stop() it first, or restart() it.")
        if self.test_loop is not None and asyncio.get_running_loop() is not self.test_loop:
            raise KopfOperatorError(
                "kopf_operator.start() is awaited in another event loop than the test's own. Start it in the test, "
                "or in an async fixture of the test (function-scoped: the plugin runs it in the test's loop, with "
                "or without pytest-asyncio), or in a sync fixture with kopf_loop.run(kopf_operator.start(...))."
            )
        self._start_kwargs = dict(
            paths=list(paths),
            modules=list(modules),
            registry=registry,
            settings=settings,
            namespaces=list(namespaces),
            clusterwide=clusterwide,
            memo=memo,
            log_level=log_level,
            check_resources=check_resources,
            timeout=timeout,
        )
        await self._start(**self._start_kwargs)

    async def _start(
        self,
        *,
        paths: Sequence[str | os.PathLike[str]],
        modules: Sequence[str],
        registry: kopf.OperatorRegistry | None,
        settings: kopf.OperatorSettings | None,
        namespaces: Sequence[str | Pattern[str]],
        clusterwide: bool,
        memo: Any,
        log_level: int,
        check_resources: bool,
        timeout: float,
    ) -> None:
        loop = self._loop = asyncio.get_running_loop()
        if isinstance(loop, VirtualTimeLoop):
            pin_utcnow_to_loop(loop.now(), loop)  # the operator's timestamps follow the virtual clock
        self.exception = None
        self.exit_code = None
        self.registry = registry if registry is not None else self._files.load(paths, modules)
        refresh_active()  # the client libraries that the operator has imported: in-cluster loading too
        observer = RequestObserver()  # sees the operator's watch requests: start() waits for its listings
        credentials = self._credentials(observer)
        if registry is None and not self.registry.activities.get_handlers(Activity.AUTHENTICATION):
            # Re-login (after HTTP 401) gets the same credentials (real mode: the same kubeconfig context read
            # anew, for a fresh token of an exec plugin), never the environment's kubeconfig.
            kopf.on.login(id="pytest-kopf", registry=self.registry)(functools.partial(self._relogin, credentials))
        self.settings = settings if settings is not None else _fresh_settings(self.reuse_threads)
        self.memo = memo
        if isinstance(self.cluster, SimKopfCluster):
            server = InProcessWebhookServer(self.cluster.sim.admission, self.registry)
            self._admission = SimAdmissionSettings(self.settings.admission, server)
            self.settings.admission = self._admission

        self._threads_before = set(threading.enumerate())
        self._capture.attach(log_level)
        self._tasks.install(loop)
        ready_flag = asyncio.Event()
        self._stop_flag = asyncio.Event()
        insights = Insights()
        self.memories = ResourceMemories()
        context = contextvars.copy_context()
        context.run(owner_var.set, self)
        context.run(handles_os_signals.set, False)  # Ctrl+C interrupts pytest, not just the operator
        self._task = loop.create_task(
            self._operator(
                registry=self.registry,
                settings=self.settings,
                insights=insights,
                memories=self.memories,
                namespaces=namespaces,
                clusterwide=clusterwide or not namespaces,
                stop_flag=self._stop_flag,
                ready_flag=ready_flag,
                vault=Vault({"pytest-kopf": credentials}),
                memo=memo,
            ),
            name=f"kopf operator #{next(_counter)}",
            context=context,
        )

        ready = loop.create_task(ready_flag.wait(), name="kopf operator readiness")
        try:
            done, _ = await asyncio.wait([ready, self._task], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ready
        if self._task.done():
            try:
                await self._finished()
            finally:
                self._task = None
                self._tasks.uninstall()
            raise KopfOperatorError(f"The operator has failed to start: {self._describe_exit()}") from self.exception
        if not done:
            await self.stop()
            raise KopfOperatorError(f"The operator has not become ready in {timeout} s.\n{self._capture.tail()}")
        if check_resources:
            await self._check_resources(insights, timeout)
        await self._wait_until_ready(insights, observer, timeout)
        if isinstance(self.cluster, SimKopfCluster):  # as its startup handlers have set it
            self.cluster.sim.operator_settings = self.settings

    async def _operator(self, **kwargs: Any) -> None:
        """``kopf.operator()``, except that the tasks of the test & the fixtures are not the operator's."""
        root_tasks = await kopf.spawn_tasks(lifecycle=self._activities_lifecycle, **kwargs)
        await kopf.run_tasks(root_tasks, ignored=NotOurs(self._tasks))

    async def _wait_until_ready(self, insights: Insights, observer: RequestObserver, timeout: float) -> None:
        """Until the operator has listed its resources and its webhook configurations are in place (or fail)."""
        assert self.registry is not None and self.settings is not None
        try:
            async with asyncio.timeout(timeout):
                await insights.ready_resources.wait()
                await insights.ready_namespaces.wait()
            await wait_until_ready(
                cluster=self.cluster,
                registry=self.registry,
                settings=self.settings,
                insights=insights,
                observer=observer,
                timeout=timeout,
            )
        except (TimeoutError, KopfTimeoutError) as exc:
            await self.stop()
            raise KopfOperatorError(
                f"The operator has not become ready in {timeout} s: {exc or 'no resources'}\n{self._capture.tail()}"
            ) from None

    def _credentials(self, observer: RequestObserver) -> ConnectionInfo:
        connection = self.cluster.connection
        if isinstance(self.cluster, RealKopfCluster):
            info = self.cluster.credentials  # kopf's own login from the kubeconfig context
        else:
            # The operator's own token: its requests are told from the test's (RBAC, --kopf-rbac-report).
            token = self.cluster.sim.operator_token if isinstance(self.cluster, SimKopfCluster) else None
            info = ConnectionInfo(
                server=connection.base_url,
                default_namespace=connection.namespace,
                scheme="Bearer" if token else None,
                token=token,
            )
        factory = observer.wrap(connection.connector_factory)
        if not isinstance(self.cluster, RealKopfCluster):  # the trace of a check's run tells which handler asked
            factory = tagging_handlers(factory)
        self._lifeline = Lifeline(factory)  # a new one per run: cut by crash()
        return info.with_connector_factory(self._lifeline.connector)

    def _relogin(self, credentials: ConnectionInfo, **_: Any) -> ConnectionInfo:
        """The login handler of the operators loaded from files: the test's own credentials, never others."""
        if isinstance(self.cluster, RealKopfCluster):
            return self.cluster.relogin().with_connector_factory(credentials.connector_factory)
        return credentials

    async def _check_resources(self, insights: Insights, timeout: float) -> None:
        assert self.registry is not None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await insights.ready_resources.wait()
        unserved: dict[str, list[str]] = {}
        for resource_registry in self.registry.resource_registries:
            for handler in resource_registry.get_all_handlers():
                selector = handler.selector
                if selector is not None and not selector.select(insights.resources):
                    unserved.setdefault(_describe(selector), []).append(str(handler.id))
        if unserved:
            await self.stop()
            lines = [
                f"  - {selector}: handlers {', '.join(repr(id) for id in ids)}" for selector, ids in unserved.items()
            ]
            raise KopfResourceError(
                "The operator has handlers for resources that the cluster does not serve:\n"
                + "\n".join(lines)
                + "\nApply their CRDs before starting the operator (e.g. await kopf_cluster.apply('crd.yaml')), "
                "or start it with check_resources=False if they appear later."
            )

    # -- stopping ----------------------------------------------------------------------------------

    async def stop(self, *, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """Stop the operator gracefully (its cleanup handlers run); fail if it leaves tasks or threads behind.

        The operator's own crash, if any, is not raised here: see :attr:`exception` and :attr:`exit_code`.
        """
        if self._burial is not None:
            await self._buried()
        task = self._task
        if task is None:
            return
        if self._stop_flag is not None:
            self._stop_flag.set()
        hung = False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not task.done():
            done, _ = await asyncio.wait([task], timeout=timeout)
            hung = not done
        if not hung:  # as a process's exit waits for its pool's threads: the sync handlers still running
            await self._handler_threads_done(deadline)
        if self._task is not task:  # crashed while stopping (e.g. a fault after a write): crash() has ended it
            await self._buried()
            return
        try:
            if hung:
                names = ", ".join(repr(t.get_name()) for t in self._tasks.pending())
                leftovers = describe_tasks(asyncio.get_running_loop())
                await self._abandon()
                raise KopfLeakError(
                    f"The operator has not stopped in {timeout} s after the stop was requested; "
                    f"its tasks still running: {names}.\n{leftovers}"
                )
            await self._finished()
        finally:
            self._task = None
            self._tasks.uninstall()

    async def _handler_threads_done(self, deadline: float) -> None:
        """Wait (until the loop time ``deadline``) for the sync handlers that still run in the executor's threads.

        kopf's stop cancels the tasks that await them, not the threads: a real operator's process, stopped
        gracefully, exits once its thread pool's threads have finished their jobs. A sync handler that takes its
        time (a 30 s ``time.sleep()`` in a delete handler) is no leak; one that never returns still is.
        """
        executor = self.settings.execution.executor if self.settings is not None else None
        if not isinstance(executor, LentThreadsExecutor):
            return
        loop = asyncio.get_running_loop()
        while (pending := executor.pending()) and loop.time() < deadline:
            await jobs_done(pending, timeout=min(deadline - loop.time(), JOBS_POLLING))

    async def _abandon(self) -> None:
        """Cancel whatever is left of the operator (a few times: some tasks resist), then let it go."""
        await self._cancel_pending(3)
        self._cleanup_run()

    async def _cancel_pending(self, rounds: int) -> None:
        """Cancel the operator's pending tasks (in the order they were made), again for those that resist."""
        for _ in range(rounds):
            pending = self._tasks.pending_in_order()
            if not pending:
                break
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=1.0)

    async def _finished(self) -> None:
        """Collect the exit state; restore the settings; check for leaked tasks & threads."""
        task = self._task
        assert task is not None
        if task.cancelled():
            self.exception, self.exit_code = None, 1
        else:
            self.exception = task.exception()
            self.exit_code = 0 if self.exception is None else 1
        self._cleanup_run()
        # The sync clients' pooled connections made by its handlers are the clients', not the operator's tasks.
        routing.end_connections(asyncio.get_running_loop(), lambda context: context.get(owner_var) is self)
        for _ in range(3):  # let the just-cancelled tasks (and the ended connections) finish their last steps
            await asyncio.sleep(0)
        leaked_tasks = self._tasks.pending()
        leaked = leaked_threads(self.settings, self._threads_before) if self.settings is not None else []
        if leaked_tasks or leaked:
            lines = ["The operator has left tasks or threads behind after it has stopped:"]
            lines.extend(f"  - task {t.get_name()!r} running {coro_name(t)}" for t in leaked_tasks)
            lines.extend(f"  - thread {t.name!r}{' (daemon)' if t.daemon else ''}" for t in leaked)
            if leaked:
                lines.append(describe_leaked_threads(leaked))
            raise KopfLeakError("\n".join(lines))

    def _cleanup_run(self) -> None:
        if self.settings is not None and self._admission is not None:
            self.settings.admission = self._admission.restore()
            self._admission = None
        self._capture.detach()
        self._files.unload()

    async def restart(self) -> None:
        """Stop the operator and start it again with the same arguments, as a new process would.

        The files and modules are loaded anew into a new registry (a registry given to ``start()`` is reused),
        with the same settings. After :meth:`crash`, the settings are fresh too (unless given to ``start()``);
        the memory of the crashed one (memos, indices, daemons) is gone.
        """
        if self._start_kwargs is None:
            raise KopfOperatorError("The operator has never been started: nothing to restart.")
        if self._restarting is None:
            self._restarting = asyncio.Lock()
        async with self._restarting:  # one restart at a time (e.g. a test's, and one after a crash)
            if self._burial is not None:
                await self._buried()
                if not self.running:
                    await self._start(**self._start_kwargs)
                return
            await self.stop()
            if self.running:
                return
            if self.exit_code == CRASH_EXIT_CODE:  # crashed while stopping: a fresh one
                await self._start(**self._start_kwargs)
                return
            kwargs = dict(self._start_kwargs, settings=self.settings)  # files & modules loaded anew, as a new process
            await self._start(**kwargs)

    # -- crashing ----------------------------------------------------------------------------------

    @property
    def crashed(self) -> bool:
        """Whether the last run has ended by :meth:`crash` (until the next start)."""
        return self._burial is not None or (self._task is None and self.exit_code == CRASH_EXIT_CODE)

    def crash(self) -> asyncio.Future[None]:
        """Kill the operator as SIGKILL would kill its process; ``await`` it to let its remains settle.

        At once, with no awaiting in between: its way to the API is cut (its connections closed, new
        ones refused), and all its tasks are cancelled. No cleanup handlers reach the cluster, no
        finalizers are removed, the handlers in flight are abandoned mid-way, its memory is lost.
        Its leftovers are not reported as leaks; the threads of its sync handlers are waited for a
        little and not lent to anyone again if they are still busy. Then :meth:`restart` starts a fresh
        operator. Safe to call from a callback in the loop (e.g. of a fault after the k-th write; also one
        served while the operator's loop is blocked by a sync client, see :mod:`pytest_kopf._blocking`).
        """
        loop = self.loop or asyncio.get_running_loop()
        if self._burial is not None:
            return self._burial
        task = self._task
        if task is None or task.done():
            done: asyncio.Future[None] = loop.create_future()
            done.set_result(None)
            return done
        self.crashes += 1
        if self._lifeline is not None:
            self._lifeline.cut(loop)
        for victim in self._tasks.pending_in_order():
            victim.cancel()
        self._task = None
        self.exception, self.exit_code = None, CRASH_EXIT_CODE
        self._burial = loop.create_task(
            self._bury(), name="burial of a crashed kopf operator", context=contextvars.Context()
        )  # not a task of the operator
        return self._burial

    def _activities_lifecycle(self, handlers: Sequence[Any], **kwargs: Any) -> Sequence[Any]:
        """The default order of the activities' handlers; none at all once crashed (a killed process runs none)."""
        if self._burial is not None:
            return []
        return kopf.get_default_lifecycle()(handlers=handlers, **kwargs)

    async def _buried(self) -> None:
        burial = self._burial
        if burial is not None:
            try:
                await asyncio.shield(burial)
            finally:
                self._burial = None

    async def _bury(self) -> None:
        """Let the cancelled tasks of a crashed operator end (cancelling again those that resist), then forget it."""
        try:
            await self._cancel_pending(CRASH_CANCELLATIONS)
            if self.settings is not None:
                executor = self.settings.execution.executor
                if isinstance(executor, LentThreadsExecutor):
                    await abandon_jobs(executor)
                    executor.finish(THREADS_GRACE)
                    self.settings.execution.executor = LentThreadsExecutor(self.settings.execution.max_workers)
        finally:
            self._tasks.uninstall()
            self._tasks = OperatorTasks(self)  # the leftovers that resist are not the next run's
            self._cleanup_run()

    async def __aenter__(self) -> KopfOperator:
        if not self.running and self._start_kwargs is not None:
            await self._start(**self._start_kwargs)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        await self.stop()

    # -- reporting ---------------------------------------------------------------------------------

    def _describe_exit(self) -> str:
        if self.exception is None:
            return "it has exited with no error."
        return f"{one_line(self.exception)}\n{self._capture.tail()}"


def _fresh_settings(reuse_threads: bool) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True  # no peering objects in the test's cluster
    if reuse_threads:
        settings.execution.executor = LentThreadsExecutor()
    return settings


def _describe(selector: Any) -> str:
    """A selector as the handler's decorator has named it: ``kopfexamples``, ``kopf.dev/v1 kind=KopfExample``."""
    group_version = "/".join(part for part in (selector.group, selector.version) if part)
    names = [str(selector.any_name)] if selector.any_name else []
    names.extend(
        f"{field}={getattr(selector, field)}"
        for field in ("kind", "plural", "singular", "shortcut", "category")
        if getattr(selector, field)
    )
    return " ".join(part for part in (group_version, *names) if part) or repr(selector)
