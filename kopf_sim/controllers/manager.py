"""The controller manager: the built-in controllers of one simulated cluster, their queue, timers and switches.

Usage (in the cluster's event loop)::

    manager = ControllerManager(cluster)                # all controllers, default timings
    manager.start()                                     # nodes, namespaces' defaults: at once
    ...
    manager.fate("app=web", Fate.crash_loop())          # steer the pods' fates
    manager.disable("cronjobs")                         # switch one off (or on again)
    await manager.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Iterable
from typing import Any

from kopf_sim.kube.objects import meta
from kopf_sim.kube.resources import ResourceType, StorageKey
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.watching import Change

from .fates import Fate, FateRule, Fates, Selector
from .runtime import Controller, Key
from .settings import CONTROLLERS, ControllerSettings

__all__ = ["ControllerManager"]

logger = logging.getLogger("kopf_sim.controllers")

#: How often one key may be reconciled at the same moment before it is suspected of a livelock.
LIVELOCK_LIMIT = 100
ERROR_BACKOFF = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)

QueueItem = tuple[str, Key]


@functools.cache
def _controller_classes() -> dict[str, type[Controller]]:
    from . import (
        cronjobs,
        daemonsets,
        deployments,
        jobs,
        namespaces,
        nodes,
        pods,
        replicasets,
        services,
        statefulsets,
        volumes,
    )

    classes: list[type[Controller]] = [
        nodes.NodeController,
        namespaces.NamespaceController,
        volumes.VolumeController,
        pods.PodController,
        replicasets.ReplicaSetController,
        deployments.DeploymentController,
        statefulsets.StatefulSetController,
        daemonsets.DaemonSetController,
        jobs.JobController,
        cronjobs.CronJobController,
        services.ServiceController,
    ]
    return {cls.name: cls for cls in classes}


class ControllerManager:
    """The built-in controllers of one cluster, run as one task of the cluster's event loop."""

    def __init__(self, cluster: Cluster, settings: ControllerSettings | None = None) -> None:
        self.cluster = cluster
        self.settings = settings or ControllerSettings()
        self.fates = Fates(on_change=self._fates_changed)
        #: Unexpected exceptions of the controllers (a bug, not an API error): logged, and kept for tests.
        self.failures: list[BaseException] = []
        classes = _controller_classes()
        self._controllers: dict[str, Controller] = {name: classes[name](self) for name in CONTROLLERS}
        self._routes: dict[StorageKey, list[Controller]] = {}
        for controller in self._controllers.values():
            for key in (controller.primary, *controller.watches):
                self._routes.setdefault(key, []).append(controller)
        self._rtypes: dict[StorageKey, ResourceType] = {}
        self._queue: dict[QueueItem, None] = {}
        self._timers: dict[QueueItem, asyncio.TimerHandle] = {}
        self._retries: dict[QueueItem, int] = {}
        self._spins: dict[QueueItem, tuple[float, int]] = {}
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- Switches & settings -------------------------------------------------------------------------------

    @property
    def enabled(self) -> frozenset[str]:
        return self.settings.enabled

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def controller(self, name: str) -> Controller:
        try:
            return self._controllers[name]
        except KeyError:
            raise ValueError(f"Unknown controller {name!r}; known ones are: {', '.join(CONTROLLERS)}.") from None

    def enable(self, *names: str) -> None:
        """Switch controllers on (all if no names given); running ones catch up with the current state."""
        names = names or CONTROLLERS
        for name in names:
            self.controller(name)
        added = [n for n in CONTROLLERS if n in names and n not in self.enabled]
        self.settings = self.settings.with_enabled(self.enabled | set(added))
        if self._loop is not None:
            for name in added:
                self._start_one(self._controllers[name])

    def disable(self, *names: str) -> None:
        """Switch controllers off (all if no names given): what they did stays; nothing more happens."""
        names = names or CONTROLLERS
        for name in names:
            self.controller(name)
        self.settings = self.settings.with_enabled(self.enabled - set(names))
        for name in names:
            self._controllers[name].stopped()
        for item in [item for item in self._timers if item[0] in names]:
            self._timers.pop(item).cancel()

    def configure(self, **changes: Any) -> ControllerSettings:
        """Change the timings (e.g. ``pod_ready_delay=5``); they apply to what happens from now on."""
        self.settings = dataclasses.replace(self.settings, **changes)
        return self.settings

    def fate(self, selector: Selector, fate: Fate, *, namespace: str | None = None) -> FateRule:
        """Steer the pods that the label selector picks (in a namespace or all): see :class:`.Fate`."""
        return self.fates.add(selector, fate, namespace=namespace)

    # -- Lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start in the running loop: bootstrap objects (nodes, namespaces' defaults) are there on return."""
        if self._task is not None:
            raise RuntimeError("The controllers are already started.")
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        started = [self._controllers[name] for name in CONTROLLERS if name in self.enabled]
        for controller in started:  # complete as created: no controller needs to hear of them
            controller.bootstrap()
        self.cluster.observers.append(self._observe)
        for controller in started:
            for key in controller.initial_keys():
                self.enqueue(controller.name, key)
        self._task = self._loop.create_task(self._run(), name="kopf-sim controllers")

    async def stop(self) -> None:
        if self._observe in self.cluster.observers:
            self.cluster.observers.remove(self._observe)
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._queue.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for controller in self._controllers.values():
            controller.stopped()
        self._loop = None

    def _start_one(self, controller: Controller) -> None:
        controller.bootstrap()
        for key in controller.initial_keys():
            self.enqueue(controller.name, key)

    # -- The queue -----------------------------------------------------------------------------------------

    def rtype(self, key: StorageKey) -> ResourceType:
        """The served type of a storage key (the preferred version), looked up once per manager."""
        rtype = self._rtypes.get(key)
        if rtype is None:
            candidates = self.cluster.catalogue.for_storage(key)
            if not candidates:
                raise LookupError(f"The cluster serves no {key[1]} in group {key[0]!r}.")
            rtype = self._rtypes[key] = next((t for t in candidates if t.preferred), candidates[0])
        return rtype

    def _observe(self, change: Change) -> None:
        routes = self._routes.get(change.key)
        if not routes:
            return
        enabled = self.settings.enabled
        for controller in routes:
            if controller.name in enabled:
                for key in controller.keys_for(change):
                    self.enqueue(controller.name, key)

    def enqueue(self, name: str, key: Key) -> None:
        if name not in self.settings.enabled or self._wakeup is None:
            return
        self._queue[(name, key)] = None
        self._wakeup.set()

    def schedule(self, name: str, key: Key, delay: float) -> None:
        """Enqueue the key after a delay (the earliest pending time of the same key wins)."""
        loop = self._loop
        if loop is None:
            return
        item = (name, key)
        when = loop.time() + max(0.0, delay)
        existing = self._timers.get(item)
        if existing is not None:
            if existing.when() <= when:
                return
            existing.cancel()
        self._timers[item] = loop.call_at(when, self._fire, item)

    def pending(self, *, besides: frozenset[str] = frozenset({"cronjobs"})) -> list[float]:
        """The loop times when the controllers' scheduled work is due (a finished Job's deletion after its TTL, a
        pod's start or readiness, a retry...), but for those ``besides`` (a CronJob's schedule: it never ends).

        What is due will change the cluster, or may: a run is not over while it is pending."""
        return sorted(handle.when() for (name, _), handle in self._timers.items() if name not in besides)

    def _fire(self, item: QueueItem) -> None:
        self._timers.pop(item, None)
        self.enqueue(*item)

    def _fates_changed(self) -> None:
        if "pods" in self.enabled and self._loop is not None:
            for pod in self.cluster.objects(("", "pods")):
                if meta(pod).get("uid"):
                    self.enqueue("pods", (meta(pod).get("namespace") or "", meta(pod)["name"]))

    async def _run(self) -> None:
        assert self._wakeup is not None
        wakeup = self._wakeup
        while True:
            await wakeup.wait()
            wakeup.clear()
            while self._queue:
                item = next(iter(self._queue))
                del self._queue[item]
                name = item[0]
                if name not in self.settings.enabled:
                    continue
                if self._spinning(item):
                    continue
                await self._reconcile(self._controllers[name], item)
                await asyncio.sleep(0)  # let the clients & operators see this step's changes before the next

    async def _reconcile(self, controller: Controller, item: QueueItem) -> None:
        from kopf_sim.kube import errors

        timer = self._timers.pop(item, None)  # each pass sets the timers it needs: none goes stale
        if timer is not None:
            timer.cancel()
        try:
            await controller.reconcile(item[1])
        except errors.ApiError as exc:
            attempt = self._retries.get(item, 0)
            self._retries[item] = attempt + 1
            delay = 0.0 if exc.code == 409 and attempt == 0 else ERROR_BACKOFF[min(attempt, len(ERROR_BACKOFF) - 1)]
            logger.debug(
                "%s: %s/%s failed (%s %s), retrying in %s s", controller.name, *item[1], exc.code, exc.message, delay
            )
            self.schedule(controller.name, item[1], delay)
        except Exception as exc:
            self.failures.append(exc)
            logger.exception("%s: reconciling %s/%s failed", controller.name, *item[1])
            attempt = self._retries.get(item, 0)
            self._retries[item] = attempt + 1
            self.schedule(controller.name, item[1], ERROR_BACKOFF[min(attempt, len(ERROR_BACKOFF) - 1)])
        else:
            self._retries.pop(item, None)

    def _spinning(self, item: QueueItem) -> bool:
        """Whether a key keeps coming back at the same moment (a livelock): then it waits a second."""
        assert self._loop is not None
        now = self._loop.time()
        since, count = self._spins.get(item, (now, 0))
        count = count + 1 if since == now else 1
        self._spins[item] = (now, count)
        if len(self._spins) > 10_000:
            self._spins = {k: v for k, v in self._spins.items() if v[0] == now}
        if count > LIVELOCK_LIMIT:
            logger.warning(
                "%s: %s/%s was reconciled %d times at %s s; pausing it for a second", item[0], *item[1], count, now
            )
            self._spins.pop(item, None)
            self.schedule(item[0], item[1], 1.0)
            return True
        return False

    def keys(self, name: str) -> Iterable[Key]:
        """The keys waiting in the queue for a controller (for diagnostics)."""
        return [key for n, key in self._queue if n == name]
