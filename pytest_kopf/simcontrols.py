"""``kopf_cluster.sim``: what only a simulated cluster can do, and its set-up and teardown.

The test's API client (:class:`pytest_kopf.client.Client`) is the same in both modes; this object is
the simulator behind it in sim mode, as controller-runtime's fake client and interceptors stand beside
its real client: the store, the fault injection, virtual time, the in-process admission webhooks, the
built-in controllers, and the in-memory server that the operator under test connects to. In real mode
``kopf_cluster.sim`` raises :class:`~pytest_kopf.errors.KopfModeError` (mark such tests ``kopf_sim_only``).
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import functools
import pathlib
import secrets
from collections.abc import Callable
from typing import IO, Any, TypedDict, Unpack

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

import kopf
from kopf._kits.testing import iter_object_diff
from kopf_sim.admission.control import AdmissionControl
from kopf_sim.controllers import ControllerManager, ControllerSettings
from kopf_sim.http import faults as sim_faults
from kopf_sim.http.app import ACCESS_KEY, ADMISSION_KEY, build_app
from kopf_sim.rbac.access import Access
from kopf_sim.rbac.users import ADMIN
from kopf_sim.recording.eventlog import ChangeRecorder
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.watching import Change
from kopf_sim.timing.clock import SeededUids, system_clock
from kopf_sim.timing.virtualtime import LivelockError, VirtualTimeLoop, loop_clock
from kopf_sim.transports.inmemory import InMemoryServer
from kopf_sim.transports.serving import ServedApp

from ._clientconfig import CLIENTS_TOKEN
from ._rbac import OPERATOR_LABEL
from ._running import is_virtual
from .errors import KopfModeError

__all__ = ["MAX_CHANGES_PER_INSTANT", "InstantGuard", "SimControls", "SimOptions"]

#: How many times one object may change at one virtual instant before the run counts as an endless update loop.
MAX_CHANGES_PER_INSTANT = 500


class SimOptions(TypedDict, total=False):
    """How a test's simulated cluster is made."""

    #: Where to write the watch-event log of every change (``--kopf-record``).
    record_path: pathlib.Path | None
    #: The seed of the uids and of the faults' randomness.
    seed: int
    #: The built-in controllers and their timings (the ``kopf_controllers`` marker).
    controllers: ControllerSettings | None
    #: How many revisions the cluster goes on before the test's objects (0: none): their resourceVersions differ
    #: from those of a cluster with another offset, as two real clusters' do (wherever an operator copies them).
    revision_offset: int


class SimControls:
    """A fresh simulated cluster of one test, and its controls (``kopf_cluster.sim``)."""

    def __init__(
        self, *, loop: asyncio.AbstractEventLoop, tmp_dir: Callable[[], pathlib.Path], **options: Unpack[SimOptions]
    ) -> None:
        self._virtual = is_virtual(loop)
        self._tmp_dir = tmp_dir
        seed = options.get("seed", 0)
        #: The simulated cluster's store (:class:`kopf_sim.store.cluster.Cluster`): its objects, observers, watches.
        self.store = Cluster(clock=loop_clock(loop) if self._virtual else system_clock, uids=SeededUids(seed))
        #: The fault injection rules of the simulated apiserver (errors, latency, dropped watches, conflicts).
        self.faults = sim_faults.FaultInjector(seed, store=self.store)
        #: Where the operator last started on this cluster keeps its state in the objects (its settings' persistence:
        #: progress, diff-base, with their own prefixes and keys): its bookkeeping, not its outcome.
        self.operator_settings: kopf.OperatorSettings | None = None
        #: The simulated apiserver's application (the test's own requests go straight into it).
        self.app = build_app(self.store)
        #: Middlewares that see the operator's requests before anything else (e.g. a trace's), added at any time.
        self.taps: list[Middleware] = []
        self.app.middlewares.insert(0, self._tapped)
        sim_faults.install(self.app, self.faults)
        #: Who makes the requests and what RBAC allows them (not enforced unless ``kopf_cluster.rbac()``).
        self.access: Access = self.app[ACCESS_KEY]
        #: The tokens of the operator under test (kopf's own, its handlers' official clients'): its requests are
        #: told from the test's own, which carry none.
        self.operator_token = self.access.add_token(ADMIN, label=OPERATOR_LABEL)
        self.operator_tokens = (
            self.operator_token,
            self.access.add_token(ADMIN, label=OPERATOR_LABEL, token=CLIENTS_TOKEN),
        )
        #: The admission control of the simulated apiserver (to serve webhook URLs in-process).
        self.admission: AdmissionControl = self.app[ADMISSION_KEY]
        #: The in-memory server of the simulated apiserver (the operator's requests go there).
        self.server = InMemoryServer(self.app, access_log=None)  # no access log lines from the simulator
        #: The built-in controllers (switches, timings, pods' fates: ``controllers.fate(...)``).
        self.controllers = ControllerManager(self.store, options.get("controllers"))
        #: The objects of the fresh cluster, by storage key, namespace & name (as stored at its start: the same in
        #: every cluster of the same controllers), for the end states of the checks (:func:`~.driving.end_state`).
        self.bootstrap: dict[tuple[tuple[str, str], str | None, str], dict[str, Any]] = {}
        self._record_path = options.get("record_path")
        self._revision_offset = options.get("revision_offset", 0)
        self._record_stream: IO[str] | None = None
        self._served: ServedApp | None = None
        self._kubeconfig: pathlib.Path | None = None
        #: What undoes what others have attached to this cluster (e.g. a log handler), when it stops.
        self.cleanups: list[Callable[[], None]] = []
        #: What fails a run whose objects keep changing with no virtual time passing (virtual time only).
        self.guard: InstantGuard | None = None
        if isinstance(loop, VirtualTimeLoop):
            self.guard = InstantGuard(loop)
            self.store.observers.append(self.guard.observe)

    @web.middleware
    async def _tapped(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The request through the taps (the first one outermost), then the app's own middlewares."""
        for tap in reversed(self.taps):
            handler = functools.partial(tap, handler=handler)
        return await handler(request)

    # -- the controls -----------------------------------------------------------------------------

    @property
    def now(self) -> datetime.datetime:
        """The simulated cluster's wall-clock time (virtual, derived from the loop time)."""
        return self.store.clock()

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass (everything else keeps running)."""
        if not is_virtual(asyncio.get_running_loop()):
            raise KopfModeError(
                "kopf_cluster.sim.advance() needs virtual time, but this test runs in real time "
                "(it is marked kopf_real_time); use asyncio.sleep() to let real time pass."
            )
        await asyncio.sleep(seconds)

    def session(self, **kwargs: Any) -> aiohttp.ClientSession:
        """A client session over the in-memory transport (subject to faults, as the operator's)."""
        return self.server.session(**kwargs)

    # -- the lifecycle (through kopf_cluster's set-up and teardown) ---------------------------------

    async def start(self) -> None:
        self.controllers.start()  # the bootstrap objects (nodes, namespaces' defaults) are no test's doing
        self.bootstrap = {
            (key, obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj
            for key, obj in self.store.everything()
        }
        if self._revision_offset:
            self.store.skip_revisions(self._revision_offset)
        if self._record_path is not None:
            self._record_path.parent.mkdir(parents=True, exist_ok=True)
            self._record_stream = self._record_path.open("w", encoding="utf-8")
            self.store.observers.append(
                ChangeRecorder(
                    self._record_stream,
                    clock=self.store.clock,
                    source={"recorder": "pytest --kopf-record", "mode": "sim"},
                )
            )
        await self.server.start()

    async def stop(self) -> None:
        try:
            await self.controllers.stop()
            if self._served is not None:
                await self._served.stop()
                self._served = None
            await self.server.stop()
        finally:
            if self._record_stream is not None:
                self._record_stream.close()
                self._record_stream = None
            for cleanup in reversed(self.cleanups):
                cleanup()
            self.cleanups.clear()

    async def serve(self) -> pathlib.Path:
        """Serve the cluster on 127.0.0.1 (HTTPS, a token) for other processes, once; its kubeconfig's path.

        Other processes run in real time, so this needs a test marked ``kopf_real_time``.
        """
        if self._virtual:
            raise KopfModeError(
                "kopf_cluster.kubeconfig() serves the simulated cluster on a real socket for other processes "
                "(kubectl, kopf run), which cannot follow the virtual time of this test; "
                "mark the test with @pytest.mark.kopf_real_time."
            )
        if self._kubeconfig is None:
            app = build_app(self.store)
            sim_faults.install(app, self.faults)
            served = ServedApp(app, tls=True, token=secrets.token_urlsafe(16))
            await served.start()
            self._served = served
            path = self._tmp_dir() / "kubeconfig"
            served.write_kubeconfig(path)
            self._kubeconfig = path
        return self._kubeconfig


class InstantGuard:
    """Fails a run in which one object keeps changing with no virtual time passing: an endless update loop.

    Virtual time moves only when nothing is left to run. A handler that writes to the object it handles on
    every event (no delay, no check that the write is needed) makes a new event each time, so the loop is
    never idle and its clock stays where it is: every timer (``asyncio.sleep()``, a timeout, ``settle()``'s
    deadline) is never due, and the test would spin forever at one moment. A real cluster's latency would
    merely slow such a loop down; here, it is counted: when one object (k8s Events aside) has changed
    :attr:`limit` times at one virtual instant, a :class:`~kopf_sim.timing.virtualtime.LivelockError` naming
    it and its last changes goes to the code waiting for the operator to settle (:meth:`pause`, as
    :func:`~pytest_kopf.driving.settle` does), or else is raised out of the loop's run (the test fails with
    it); again after as many more changes at that instant. Deterministic: it counts changes, not seconds.
    """

    def __init__(self, loop: VirtualTimeLoop, limit: int | None = MAX_CHANGES_PER_INSTANT) -> None:
        self.loop = loop
        #: The changes of one object at one instant that make a livelock (None: never).
        self.limit = limit
        self._ticks = -1
        self._counts: collections.Counter[tuple[Any, ...]] = collections.Counter()
        self._last: dict[tuple[Any, ...], collections.deque[Change]] = {}
        self._waiters: set[asyncio.Future[None]] = set()
        #: The last livelock seen (if any).
        self.error: LivelockError | None = None

    def observe(self, change: Change) -> None:
        if self.limit is None or change.key[1] == "events":  # kopf posts k8s Events as it handles (any group)
            return
        ticks = self.loop.ticks
        if ticks != self._ticks:
            self._ticks = ticks
            self._counts.clear()
            self._last.clear()
        metadata = change.obj.get("metadata") or {}
        key = (*change.key, metadata.get("namespace"), metadata.get("name"))
        self._counts[key] += 1
        self._last.setdefault(key, collections.deque(maxlen=3)).append(change)
        count = self._counts[key]
        if count % self.limit == 0:
            self._trip(key, count)

    def _trip(self, key: tuple[Any, ...], count: int) -> None:
        group, plural, namespace, name = key
        lines = [
            f"{plural}{'.' + group if group else ''} {namespace + '/' if namespace else ''}{name} has changed "
            f"{count} times at loop time {self.loop.time()!r} with no virtual time passing: an endless update "
            f"loop (each write makes an event, the event another write, nothing ever waits), so the virtual "
            f"time can never move on. Its last changes:"
        ]
        for change in self._last[key]:
            changed = ", ".join(_changes(change.old, change.obj)) or "no fields (only the version)"
            lines.append(f"  - {change.type} rv={change.rv}: {changed}")
        self.fail(LivelockError("\n".join(lines), loop_time=self.loop.time()))

    def fail(self, error: LivelockError) -> None:
        """Fail the run: into the code waiting for the operator to settle, or out of the loop's run."""
        self.error = error
        waiters = [waiter for waiter in self._waiters if not waiter.done()]
        for waiter in waiters:
            waiter.set_exception(error)
        if not waiters:
            self.loop.interrupt(error)

    async def pause(self, seconds: float) -> None:
        """Sleep for ``seconds`` of virtual time; raise the livelock instead if one is seen meanwhile."""
        waiter = self.loop.create_future()
        self._waiters.add(waiter)
        try:
            await asyncio.wait([waiter], timeout=seconds)
        finally:
            self._waiters.discard(waiter)
        if waiter.done():
            waiter.result()
        else:
            waiter.cancel()


#: Fields that change with every write: not what the writes are about.
_UNINTERESTING = frozenset({("metadata", "resourceVersion"), ("metadata", "managedFields"), ("metadata", "generation")})


def _changes(old: Any, new: Any, limit: int = 3) -> list[str]:
    """The fields that a change has changed (``metadata.labels.stamp: '1' -> '2'``), at most ``limit`` of them."""
    items = (item for item in iter_object_diff(old, new) if tuple(item.field[:2]) not in _UNINTERESTING)
    return [f"{'.'.join(map(str, item.field))}: {_short(item.old)} -> {_short(item.new)}" for item in items][:limit]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
