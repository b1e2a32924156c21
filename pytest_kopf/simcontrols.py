"""``kopf_cluster.sim``: what only a simulated cluster can do, and its set-up and teardown.

The test's API client (:class:`pytest_kopf.client.Client`) is the same in both modes; this object is
the simulator behind it in sim mode, as controller-runtime's fake client and interceptors stand beside
its real client: the store, the fault injection, virtual time, the in-process admission webhooks, the
built-in controllers, and the in-memory server that the operator under test connects to. In real mode
``kopf_cluster.sim`` raises :class:`~pytest_kopf.errors.KopfModeError` (mark such tests ``kopf_sim_only``).
"""

from __future__ import annotations

import asyncio
import datetime
import pathlib
import secrets
from collections.abc import Callable
from typing import IO, Any, TypedDict, Unpack

import aiohttp

from kopf_sim.admission.webhooks import AdmissionControl
from kopf_sim.controllers import ControllerManager, ControllerSettings
from kopf_sim.http import faults as sim_faults
from kopf_sim.http.app import ADMISSION_KEY, build_app
from kopf_sim.recording.eventlog import ChangeRecorder
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import SeededUids, system_clock
from kopf_sim.timing.virtualtime import loop_clock
from kopf_sim.transports.inmemory import InMemoryServer
from kopf_sim.transports.serving import ServedApp

from .errors import KopfModeError
from .running import is_virtual

__all__ = ["SimControls", "SimOptions"]


class SimOptions(TypedDict, total=False):
    """How a test's simulated cluster is made."""

    #: Where to write the watch-event log of every change (``--kopf-record``).
    record_path: pathlib.Path | None
    #: The seed of the uids and of the faults' randomness.
    seed: int
    #: The built-in controllers and their timings (the ``kopf_controllers`` marker).
    controllers: ControllerSettings | None


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
        self.faults = sim_faults.FaultInjector(seed)
        #: The simulated apiserver's application (the test's own requests go straight into it).
        self.app = build_app(self.store)
        sim_faults.install(self.app, self.faults)
        #: The admission control of the simulated apiserver (to serve webhook URLs in-process).
        self.admission: AdmissionControl = self.app[ADMISSION_KEY]
        #: The in-memory server of the simulated apiserver (the operator's requests go there).
        self.server = InMemoryServer(self.app, access_log=None)  # no access log lines from the simulator
        #: The built-in controllers (switches, timings, pods' fates: ``controllers.fate(...)``).
        self.controllers = ControllerManager(self.store, options.get("controllers"), admission=self.admission)
        self._record_path = options.get("record_path")
        self._record_stream: IO[str] | None = None
        self._served: ServedApp | None = None
        self._kubeconfig: pathlib.Path | None = None

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
