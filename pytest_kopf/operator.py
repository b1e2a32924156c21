"""The ``kopf_operator`` fixture's object: an operator under test, in-process, in the test's own loop.

The operator runs as a task of the test's loop (virtual time in sim mode), against
``kopf_cluster``: in sim mode through the in-memory transport (a pre-populated vault; the
admission webhooks served in-process by the simulated apiserver), in real mode with the
kubeconfig context's credentials (and the operator's own webhook settings).

Isolation: every start loads the handlers into a fresh :class:`kopf.OperatorRegistry`
(made the default registry only while the files & modules are being imported) and uses
fresh settings unless given; files are loaded under a unique module name each time, so
the same file can be loaded by many tests (and by restarts), with their directories on
``sys.path`` and their sibling modules imported afresh (:mod:`pytest_kopf._ownmodules`), as
``kopf run`` does in a new process. After a stop, the tasks and
threads that the operator has left behind fail the test (:class:`KopfLeakError`) by name.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import importlib
import importlib.machinery
import importlib.util
import io
import itertools
import logging
import os
import sys
import threading
import time
import traceback
import types
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from re import Pattern
from typing import Any

import aiohttp

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
from kopf_sim.transports.inmemory import SERVING

from . import _routing as routing
from ._admission import InProcessWebhookServer, SimAdmissionSettings
from ._clientconfig import refresh_active
from ._clocks import virtualize_modules, wait_event
from ._ownmodules import OwnModules
from ._readiness import RequestObserver, wait_until_ready
from ._realcluster import RealKopfCluster
from ._threads import LentThreadsExecutor, shared_threads
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
#: Real seconds to let the threads of the operator's executor finish after it is shut down.
THREADS_GRACE = 1.0
#: Virtual seconds for the sync handlers of a crashed operator to end (at their next wait in virtual time).
ABANDONED_JOBS_TIMEOUT = 1.0
#: The exit code of an operator killed by crash() (as of a process killed by SIGKILL).
CRASH_EXIT_CODE = 137
#: How many times the tasks of a crashed operator are cancelled (a virtual second apart) before they are left.
CRASH_CANCELLATIONS = 5
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"

_counter = itertools.count(1)

# kopf's sync waits (a sync daemon's ``stopped.wait(t)``) are idle waits in virtual time (real ones elsewhere).
set_sync_event_waiter(wait_event)

#: Which operator (if any) the current code runs for: inherited by every task that the operator spawns.
_owner: contextvars.ContextVar[KopfOperator | None] = contextvars.ContextVar("pytest_kopf_operator", default=None)

TaskFactory = Callable[..., "asyncio.Future[Any]"]


class _OperatorTasks(Collection["asyncio.Task[Any]"]):
    """The tasks of one operator: made in its context (tracked by the loop's task factory), alive or not.

    The complement serves as kopf's ``ignored`` tasks: stopping the operator must not cancel
    the test's tasks (or the fixtures' teardown), which kopf would do to any newer task.
    """

    def __init__(self, owner: KopfOperator) -> None:
        self.owner = owner
        self.tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self.serials: weakref.WeakKeyDictionary[asyncio.Task[Any], int] = weakref.WeakKeyDictionary()
        # The simulator's side of the operator's in-memory connections: made in its context (so they are stopped
        # in a fixed order with it), but kopf's exit must not wait for them as for its own "hung" tasks.
        self.serving: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.previous: TaskFactory | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.loop is not None:
            return
        self.loop, self.previous = loop, loop.get_task_factory()
        loop.set_task_factory(self._factory)

    def uninstall(self) -> None:
        if self.loop is not None and self.loop.get_task_factory() == self._factory:
            self.loop.set_task_factory(self.previous)
        self.loop = self.previous = None

    def _factory(
        self, loop: asyncio.AbstractEventLoop, coro: Any, *, context: contextvars.Context | None = None
    ) -> asyncio.Future[Any]:
        task: asyncio.Future[Any]
        if self.previous is not None:
            task = self.previous(loop, coro) if context is None else self.previous(loop, coro, context=context)
        else:
            task = asyncio.Task(coro, loop=loop, context=context)
        owner = _owner.get() if context is None else context.get(_owner)
        if owner is self.owner and isinstance(task, asyncio.Task):
            self.tasks.add(task)
            self.serials[task] = next(_counter)
            if SERVING.get() if context is None else context.get(SERVING, False):
                self.serving.add(task)
        return task

    def __contains__(self, task: object) -> bool:
        return task in self.tasks

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self.tasks))

    def __len__(self) -> int:
        return len(self.tasks)

    def pending(self) -> list[asyncio.Task[Any]]:
        return sorted((task for task in self.tasks if not task.done()), key=lambda task: task.get_name())

    def pending_in_order(self) -> list[asyncio.Task[Any]]:
        """The pending tasks in the order they were made (the same in every run of the same actions)."""
        return sorted((task for task in self.tasks if not task.done()), key=lambda task: self.serials.get(task, 0))


class _NotOurs(Collection["asyncio.Task[Any]"]):
    """All the tasks of the loop except the operator's own: kopf leaves them alone when it stops."""

    def __init__(self, ours: _OperatorTasks) -> None:
        self.ours = ours

    def __contains__(self, task: object) -> bool:
        return task not in self.ours or task in self.ours.serving

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter([task for task in asyncio.all_tasks() if task in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)


_compiled: dict[tuple[str, bytes], types.CodeType] = {}


class _OperatorFileLoader(importlib.machinery.SourceFileLoader):
    """Compiles an operator's file once per content: a test suite loads the same file in every test."""

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> types.CodeType:  # type: ignore[override]
        key = (str(path), bytes(data))
        code = _compiled.get(key)
        if code is None:
            code = _compiled[key] = super().source_to_code(data, path, _optimize=_optimize)
        return code


class _Lifeline:
    """The operator's way to the API, cut when it crashes: its connections closed, new ones refused.

    A crashed operator's leftovers (a cancelled task's last steps, a sync handler's thread still
    running) must not write to the cluster any more than a killed process could.
    """

    def __init__(self, factory: Callable[[], aiohttp.BaseConnector]) -> None:
        self.factory = factory
        self.cut_off = False
        self.connectors: list[aiohttp.BaseConnector] = []
        self.closings: list[asyncio.Future[Any]] = []

    def connector(self) -> aiohttp.BaseConnector:
        if self.cut_off:
            raise aiohttp.ClientConnectionError("The operator has crashed: it cannot reach the API anymore.")
        connector = self.factory()
        self.connectors.append(connector)
        return connector

    def cut(self, loop: asyncio.AbstractEventLoop) -> None:
        self.cut_off = True
        connectors, self.connectors = self.connectors, []
        for connector in connectors:
            # The connections are closed at once (in the call); the rest is awaited in a task not of the operator.
            self.closings.append(loop.create_task(_close(connector), context=contextvars.Context()))


async def _close(connector: aiohttp.BaseConnector) -> None:
    await connector.close()


class _Capture(logging.Handler):
    """Keeps the log records of the operator (the ``kopf`` loggers) while it runs."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


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
        self._capture = _Capture(self.records)
        self._loggers: list[tuple[logging.Logger, int]] = []
        self._modules: list[str] = []
        self._own: OwnModules | None = None  # the sibling modules of the files, and their directories
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks = _OperatorTasks(self)
        self._threads_before: set[threading.Thread] = set()
        self._admission: SimAdmissionSettings | None = None
        #: The modules loaded by the last start, by the path or name they were given as.
        self.modules: dict[str, types.ModuleType] = {}
        self._lifeline: _Lifeline | None = None
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
        formatter = logging.Formatter(LOG_FORMAT)
        return "".join(formatter.format(record) + "\n" for record in self.records)

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
        self.registry = registry if registry is not None else self._load(paths, modules)
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
        self._capture_logs(log_level)
        self._tasks.install(loop)
        ready_flag = asyncio.Event()
        self._stop_flag = asyncio.Event()
        insights = Insights()
        self.memories = ResourceMemories()
        context = contextvars.copy_context()
        context.run(_owner.set, self)
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
            raise KopfOperatorError(f"The operator has not become ready in {timeout} s.\n{self._log_tail()}")
        if check_resources:
            await self._check_resources(insights, timeout)
        await self._wait_until_ready(insights, observer, timeout)

    async def _operator(self, **kwargs: Any) -> None:
        """``kopf.operator()``, except that the tasks of the test & the fixtures are not the operator's."""
        root_tasks = await kopf.spawn_tasks(lifecycle=self._activities_lifecycle, **kwargs)
        await kopf.run_tasks(root_tasks, ignored=_NotOurs(self._tasks))

    def _load(self, paths: Sequence[str | os.PathLike[str]], modules: Sequence[str]) -> kopf.OperatorRegistry:
        """Import the files & modules into a fresh registry (the default one only meanwhile).

        The files' sibling modules are imported afresh too, with the files' directories first on ``sys.path``
        while the operator runs (:class:`~pytest_kopf._ownmodules.OwnModules`), as ``kopf run`` would in a new process.
        """
        registry = kopf.OperatorRegistry()
        self.modules = {}
        if self._own is not None:  # a run that has not been cleaned up (e.g. a failed start)
            self._own.exit()
        self._own = OwnModules(os.fspath(path) for path in paths)
        self._own.enter()
        previous = kopf.get_default_registry()
        kopf.set_default_registry(registry)
        known = set(sys.modules)
        try:
            for path in paths:
                self._load_path(os.fspath(path))
            for name in modules:
                self._load_module(name)
        except BaseException:
            self._own.loaded_now()
            self._own.exit()
            self._own = None
            raise
        finally:
            kopf.set_default_registry(previous)
            virtualize_modules(sys.modules[name] for name in set(sys.modules) - known)  # datetime.now() & co.
        self._own.loaded_now()
        return registry

    def _load_path(self, path: str) -> None:
        if not os.path.isfile(path):
            raise KopfOperatorError(
                f"Cannot load the operator from {path!r}: no such file "
                f"(relative paths are relative to {os.getcwd()!r})."
            )
        stem = "".join(char if char.isalnum() else "_" for char in os.path.splitext(os.path.basename(path))[0])
        name = f"__kopf_test_{next(_counter)}__{stem}"
        spec = importlib.util.spec_from_file_location(
            name, os.path.abspath(path), loader=_OperatorFileLoader(name, os.path.abspath(path))
        )
        if spec is None or spec.loader is None:
            raise KopfOperatorError(f"Cannot load the operator from {path!r}: not an importable Python file.")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        self._modules.append(name)
        self.modules[path] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            raise KopfOperatorError(
                f"Cannot load the operator from {path!r}: the file has failed to import "
                f"with {_one_line(exc)}\n{_traceback(exc)}"
            ) from exc

    def _load_module(self, name: str) -> None:
        """Import the module (and its package's submodules) afresh; the modules imported before are kept."""
        cached = {key: module for key, module in sys.modules.items() if key == name or key.startswith(name + ".")}
        for key in cached:
            del sys.modules[key]
        added_path = os.getcwd() not in sys.path
        if added_path:
            sys.path.insert(0, os.getcwd())
        known = set(sys.modules)
        try:
            self.modules[name] = importlib.import_module(name)
            virtualize_modules(sys.modules[key] for key in set(sys.modules) - known)  # datetime.now() & co.
        except BaseException as exc:
            raise KopfOperatorError(
                f"Cannot load the operator's module {name!r}: it has failed to import "
                f"with {_one_line(exc)}\n{_traceback(exc)}"
            ) from exc
        finally:
            if added_path:
                with contextlib.suppress(ValueError):
                    sys.path.remove(os.getcwd())
            for key in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
                del sys.modules[key]
            sys.modules.update(cached)

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
                f"The operator has not become ready in {timeout} s: {exc or 'no resources'}\n{self._log_tail()}"
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
        self._lifeline = _Lifeline(factory)  # a new one per run: cut by crash()
        return info.with_connector_factory(self._lifeline.connector)

    def _relogin(self, credentials: ConnectionInfo, **_: Any) -> ConnectionInfo:
        """The login handler of the operators loaded from files: the test's own credentials, never others."""
        if isinstance(self.cluster, RealKopfCluster):
            return self.cluster.relogin().with_connector_factory(credentials.connector_factory)
        return credentials

    def _capture_logs(self, level: int) -> None:
        logger = logging.getLogger("kopf")
        self._capture.setLevel(level)
        if self._capture not in logger.handlers:
            logger.addHandler(self._capture)
            self._loggers.append((logger, logger.level))
        if logger.getEffectiveLevel() > level:
            logger.setLevel(level)

    def _release_logs(self) -> None:
        for logger, level in self._loggers:
            logger.removeHandler(self._capture)
            logger.setLevel(level)
        self._loggers.clear()

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
            await _jobs_done(pending, timeout=min(deadline - loop.time(), JOBS_POLLING))

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
        routing.end_connections(asyncio.get_running_loop(), lambda context: context.get(_owner) is self)
        for _ in range(3):  # let the just-cancelled tasks (and the ended connections) finish their last steps
            await asyncio.sleep(0)
        leaked_tasks = self._tasks.pending()
        leaked_threads = self._leaked_threads()
        if leaked_tasks or leaked_threads:
            lines = ["The operator has left tasks or threads behind after it has stopped:"]
            lines.extend(f"  - task {t.get_name()!r} running {_coro_name(t)}" for t in leaked_tasks)
            lines.extend(f"  - thread {t.name!r}{' (daemon)' if t.daemon else ''}" for t in leaked_threads)
            if leaked_threads:
                lines.append(_describe_leaked_threads(leaked_threads))
            raise KopfLeakError("\n".join(lines))

    def _cleanup_run(self) -> None:
        if self.settings is not None and self._admission is not None:
            self.settings.admission = self._admission.restore()
            self._admission = None
        self._release_logs()
        for name in self._modules:
            sys.modules.pop(name, None)
        self._modules.clear()
        if self._own is not None:
            self._own.exit()
            self._own = None

    def _leaked_threads(self) -> list[threading.Thread]:
        """The threads started since the start and still alive, and those still running the operator's jobs.

        The executor is shut down first (a fresh one of the same kind and limit is left for a restart).
        """
        assert self.settings is not None
        executor = self.settings.execution.executor
        busy: list[threading.Thread] = []
        if isinstance(executor, LentThreadsExecutor):
            busy = executor.finish(THREADS_GRACE)
            self.settings.execution.executor = LentThreadsExecutor(self.settings.execution.max_workers)
        elif isinstance(executor, concurrent.futures.ThreadPoolExecutor):
            executor.shutdown(wait=False, cancel_futures=True)
            max_workers = self.settings.execution.max_workers
            self.settings.execution.executor = concurrent.futures.ThreadPoolExecutor(max_workers)
        loop_executor = getattr(asyncio.get_running_loop(), "_default_executor", None)
        kept = set(getattr(loop_executor, "_threads", ())) | shared_threads() | self._threads_before
        deadline = time.perf_counter() + THREADS_GRACE
        leaked = list(busy)
        for thread in threading.enumerate():
            if thread in kept or thread in busy or thread is threading.current_thread():
                continue
            thread.join(max(0.0, deadline - time.perf_counter()))
            if thread.is_alive():
                leaked.append(thread)
        return leaked

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
                    await _abandon_jobs(executor)
                    executor.finish(THREADS_GRACE)
                    self.settings.execution.executor = LentThreadsExecutor(self.settings.execution.max_workers)
        finally:
            self._tasks.uninstall()
            self._tasks = _OperatorTasks(self)  # the leftovers that resist are not the next run's
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
        return f"{_one_line(self.exception)}\n{self._log_tail()}"

    def _log_tail(self, lines: int = 30) -> str:
        tail = self.logs.splitlines()[-lines:]
        return "The operator's last log lines:\n" + "\n".join(f"  {line}" for line in tail) if tail else ""


async def _abandon_jobs(executor: LentThreadsExecutor) -> None:
    """The sync handlers of a killed process go no further: their threads' waits in virtual time end them.

    They end at once (the loop wakes them now), unless they compute: then as soon as they wait or return.
    """
    loop = asyncio.get_running_loop()
    if not isinstance(loop, VirtualTimeLoop):
        return
    executor.shutdown(wait=False, cancel_futures=True)  # the jobs not started yet never start
    loop.abandon_jobs_in(executor.running_threads())
    pending = executor.pending()
    if pending:
        await _jobs_done(pending, timeout=ABANDONED_JOBS_TIMEOUT)


async def _jobs_done(jobs: Sequence[concurrent.futures.Future[Any]], *, timeout: float) -> None:
    """Wait for the executor's jobs to end (in the loop's time); their outcomes are nobody's business here."""
    awaited = [asyncio.wrap_future(job) for job in jobs]
    for future in awaited:  # retrieved whenever they end: kopf has cancelled its own waits for them already
        future.add_done_callback(_retrieved)
    await asyncio.wait(awaited, timeout=timeout)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


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


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _traceback(exc: BaseException) -> str:
    buffer = io.StringIO()
    traceback.print_exception(exc, file=buffer)
    return buffer.getvalue().rstrip()


def _coro_name(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    return str(getattr(coro, "__qualname__", None) or coro) + "()"


#: What a sync handler, daemon or timer left running after the operator's stop usually needs.
LEAKED_THREADS_HINT = (
    "A sync handler, daemon or timer still runs in these threads after the operator has stopped. A sync daemon "
    "or timer that sleeps with time.sleep() sees its stop-flag only when it wakes up: sleep with "
    "`stopped.wait(seconds)` instead (it wakes up at once when stopped), and return when `stopped` is set."
)


def _describe_leaked_threads(threads: Sequence[threading.Thread]) -> str:
    """What the threads left behind run: the loop's jobs in them (what & where they wait), or their stacks."""
    loop = asyncio.get_running_loop()
    described = loop.describe_jobs_in(threads, "Their jobs") if isinstance(loop, VirtualTimeLoop) else None
    if described is None:
        frames = sys._current_frames()
        lines = ["Their stacks:"]
        for thread in threads:
            frame = frames.get(thread.ident) if thread.ident is not None else None
            lines.append(f"  - thread {thread.name!r}")
            if frame is not None:
                for entry in traceback.format_stack(frame):
                    lines.extend(f"      {line}" for line in entry.rstrip().splitlines())
        described = "\n".join(lines)
    return f"{described}\n{LEAKED_THREADS_HINT}"
