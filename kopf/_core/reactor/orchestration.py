"""
Orchestrating the per-dimension tasks: one watcher per resource & namespace, one peering per namespace.

The orchestrator follows the :class:`~kopf._core.reactor.observation.Insights`: on every
revision, it computes the desired set of tasks, starts the missing ones and stops
(cancels and awaits) the ones that are not needed anymore. The cluster-scoped resources
are watched once, cluster-wide, regardless of the namespaces; the namespaced ones are
watched in every served namespace (or cluster-wide for the cluster-wide operators).
On exit (cancellation), all the tasks are stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Hashable, MutableMapping
from typing import Any, TypeVar

from kopf._core.reactor.observation import Insights

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

#: Makes a coroutine to serve one dimension (e.g. a watcher of a resource in a namespace).
Spawner = Callable[[K], Coroutine[Any, Any, None]]


def watcher_dimensions(insights: Insights) -> set[tuple[Any, str | None]]:
    """Which (resource, namespace) pairs must be watched now."""
    dims: set[tuple[Any, str | None]] = set()
    for resource in insights.resources:
        if resource.namespaced is False:
            dims.add((resource, None))
        else:
            for namespace in insights.namespaces:
                dims.add((resource, namespace))
    return dims


async def reconcile(
    tasks: MutableMapping[K, asyncio.Task[None]],
    desired: set[K],
    spawner: Spawner[K],
    *,
    name: Callable[[K], str] = str,
) -> None:
    """Start the tasks for the new keys, stop the tasks of the gone keys; forget the finished tasks."""
    for key, task in list(tasks.items()):
        if task.done():
            del tasks[key]
            if not task.cancelled() and task.exception() is not None:
                logger.error(f"{name(key)} has failed and will be restarted if still needed: {task.exception()!r}")
    gone = [key for key in tasks if key not in desired]
    for key in desired:
        if key not in tasks:
            logger.debug(f"Starting {name(key)}.")
            tasks[key] = asyncio.create_task(spawner(key), name=name(key))
    await stop_tasks([tasks.pop(key) for key in gone])


async def stop_tasks(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel the tasks and wait until they are finished (ignoring their errors)."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)


async def orchestrator(
    *,
    insights: Insights,
    spawn_watcher: Spawner[tuple[Any, str | None]],
    spawn_peering: Spawner[str | None] | None = None,
    clusterwide: bool,
    wait_for_namespaces: bool = True,
) -> None:
    """Keep the watchers (and the per-namespace peerings) in line with the insights, until cancelled."""
    watchers: dict[tuple[Any, str | None], asyncio.Task[None]] = {}
    peerings: dict[str | None, asyncio.Task[None]] = {}
    try:
        await insights.ready_resources.wait()
        if wait_for_namespaces:
            await insights.ready_namespaces.wait()
        seen = -1
        while True:
            seen = insights.revision
            if spawn_peering is not None:
                desired_peerings: set[str | None] = {None} if clusterwide else set(insights.namespaces)
                await reconcile(
                    peerings,
                    desired_peerings,
                    spawn_peering,
                    name=lambda ns: f"peering in {ns!r}" if ns else "cluster-wide peering",
                )
            await reconcile(
                watchers,
                watcher_dimensions(insights),
                spawn_watcher,
                name=lambda dim: (
                    f"watcher of {dim[0]} in {dim[1]!r}" if dim[1] else f"watcher of {dim[0]} cluster-wide"
                ),
            )
            with contextlib.suppress(TimeoutError):  # re-check the failed tasks from time to time.
                await asyncio.wait_for(insights.wait_for_revision(seen), timeout=60)
    finally:
        await stop_tasks(list(watchers.values()))
        await stop_tasks(list(peerings.values()))
