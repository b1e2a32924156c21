"""Recording any cluster's watch events into a log (``kopf-sim record``, ``--kopf-record`` in real mode).

The recorder lists each chosen resource (in each chosen namespace) and writes the current
objects as ``ADDED`` events first (a custom resource's CRD before its first object, so that the
log replays alone); then it watches from the lists' versions and writes every
event as it comes, bookmarks included. When a watch ends, it watches again from the last
version; when the cluster says ``410 Gone``, the ``ERROR`` is logged, the resource listed
again, and the differences written as the changes they were (marked ``relisted``). With
``all_resources``, resources that CRDs define later are discovered and recorded too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import aiohttp

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.recording.apiclient import ApiFailure, Discovery, HttpApi, Served, request
from kopf_sim.recording.eventlog import LogWriter

__all__ = ["Capture", "CaptureError", "CaptureStats", "count_of", "record_until_stopped"]

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
PAGE_SIZE = 500
WATCH_TIMEOUT = 300  # seconds per watch request; then a new one from the last version
RETRY_DELAY = 1.0  # after a broken watch or an unreachable server


class CaptureError(Exception):
    """The recording cannot start (or go on): a clear message for the user."""


@dataclasses.dataclass(frozen=True)
class _Target:
    resource: Served
    namespace: str | None  # None: all namespaces (or a cluster-scoped resource)
    recorded: bool = True  # False: followed only to discover new CRDs

    @property
    def path(self) -> str:
        return self.resource.path(self.namespace)

    def describe(self) -> str:
        return self.resource.qualified + (f" in {self.namespace}" if self.namespace else "")


@dataclasses.dataclass
class CaptureStats:
    events: int = 0
    objects: int = 0
    resources: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (
            f"{count_of(self.events, 'event')}, {count_of(self.objects, 'object')} in "
            f"{count_of(self.resources, 'resource')}, {self.rate:.1f} events/s, {_clock(self.seconds)}"
        )


class Capture:
    """Records the chosen resources of a cluster (its :class:`HttpApi`) into a :class:`LogWriter`.

    ``resources``: names as kubectl takes them (plural, ``plural.group``, singular, short name, kind);
    ``all_resources``: every resource that can be listed and watched; ``namespaces``: only these
    (cluster-scoped resources are then recorded only if named); ``warn``: told about broken watches.
    """

    def __init__(
        self,
        api: HttpApi,
        writer: LogWriter,
        *,
        resources: Sequence[str] = (),
        all_resources: bool = False,
        namespaces: Sequence[str] = (),
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if not resources and not all_resources:
            raise CaptureError("Nothing to record: name the resources (--resource R, repeatable) or --all-resources.")
        self.api = api
        self.writer = writer
        self.discovery = Discovery(api)
        self.resource_names = list(resources)
        self.all_resources = all_resources
        self.namespaces = list(dict.fromkeys(namespaces))
        self.warn = warn or (lambda message: None)
        self._known: dict[_Target, dict[tuple[str, str], JsonDict]] = {}
        self._tasks: dict[_Target, asyncio.Task[None]] = {}
        self._seen: set[str] = set()  # the objects recorded so far (by uid)
        self._crds_looked_up: set[tuple[str, str]] = set()  # (group, plural): its CRD written, or it has none
        self._records_crds = False  # the CRDs are a recorded resource themselves (their current ones listed first)
        self._origin = 0.0

    # -- the lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Resolve the resources, list them (the current state, as ADDED events), and start watching."""
        self._origin = asyncio.get_running_loop().time()
        try:
            targets = await self._targets()
            # The CRDs first: each before the objects of the resource it defines, as a replay needs them.
            targets.sort(key=lambda target: (target.resource.group, target.resource.plural) != CRDS)
            self._records_crds = any(
                (t.resource.group, t.resource.plural) == CRDS and t.recorded and t.namespace is None for t in targets
            )
            for target in targets:
                await self._begin(target)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise CaptureError(
                f"Cannot reach the cluster at {self.api.base_url}: {exc or type(exc).__name__}"
            ) from None
        except ApiFailure as exc:
            raise CaptureError(f"The cluster at {self.api.base_url} refused to be recorded: {exc}") from None

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    def stats(self) -> CaptureStats:
        recorded = [target for target in self._known if target.recorded]
        return CaptureStats(
            events=self.writer.events,
            objects=len(self._seen),
            resources=len({t.resource for t in recorded}),
            seconds=asyncio.get_running_loop().time() - self._origin,
        )

    # -- what to record --------------------------------------------------------------------------

    async def _targets(self) -> list[_Target]:
        chosen: list[Served] = []
        for name in self.resource_names:
            found = await self.discovery.find(name)
            if found is None:
                raise CaptureError(f'The server has no resource type "{name}".')
            if not {"list", "watch"} <= set(found.verbs):
                raise CaptureError(f"The resource {found.qualified} cannot be listed and watched.")
            chosen.append(found)
        if self.all_resources:
            chosen.extend(
                info
                for info in await self.discovery.everything()
                if {"list", "watch"} <= set(info.verbs) and (info.namespaced or not self.namespaces)
            )
        targets = [target for info in dict.fromkeys(chosen) for target in self._spread(info)]
        if self.all_resources and not any((t.resource.group, t.resource.plural) == CRDS for t in targets):
            crds = await self.discovery.served(CRDS[0], "v1", CRDS[1])
            if crds is not None:
                targets.append(_Target(crds, None, recorded=False))
        return targets

    def _spread(self, info: Served) -> list[_Target]:
        if info.namespaced and self.namespaces:
            return [_Target(info, namespace) for namespace in self.namespaces]
        return [_Target(info, None)]

    async def _discover_new(self) -> None:
        """After a CRD changed: record the resources that are served now and were not before."""
        self.discovery.forget()
        known = {target.resource for target in self._known}
        for info in await self.discovery.everything():
            if info not in known and {"list", "watch"} <= set(info.verbs) and (info.namespaced or not self.namespaces):
                for target in self._spread(info):
                    await self._begin(target)

    # -- listing and watching --------------------------------------------------------------------

    async def _begin(self, target: _Target) -> None:
        version = await self._relist(target, initial=True)
        self._tasks[target] = asyncio.create_task(self._follow(target, version), name=f"recording {target.describe()}")

    async def _relist(self, target: _Target, *, initial: bool = False) -> str:
        """List the objects; write them (initially) or what changed since they were last seen; the list's version."""
        objects, version = await self._list(target)
        known = self._known.setdefault(target, {})
        if target.recorded:
            for key, obj in objects.items():
                old = known.get(key)
                if old is None:
                    await self._write(target, "ADDED", obj, relisted=not initial)
                elif meta(old).get("resourceVersion") != meta(obj).get("resourceVersion"):
                    await self._write(target, "MODIFIED", obj, relisted=True)
            for key in [key for key in known if key not in objects]:
                await self._write(target, "DELETED", known[key], relisted=True)
        self._known[target] = objects
        return version

    async def _list(self, target: _Target) -> tuple[dict[tuple[str, str], JsonDict], str]:
        objects: dict[tuple[str, str], JsonDict] = {}
        params = {"limit": str(PAGE_SIZE)}
        while True:
            listing = await request(self.api, "GET", target.path, params=params) or {}
            api_version, kind = listing.get("apiVersion", ""), str(listing.get("kind", "")).removesuffix("List")
            for item in listing.get("items") or ():
                obj = {"apiVersion": api_version, "kind": kind or target.resource.kind, **item}
                objects[_key(obj)] = obj
            metadata = listing.get("metadata") or {}
            if not metadata.get("continue"):
                return objects, str(metadata.get("resourceVersion", ""))
            params = {"limit": str(PAGE_SIZE), "continue": str(metadata["continue"])}

    async def _follow(self, target: _Target, version: str) -> None:
        """Watch for as long as the recording goes, from the last version seen."""
        while True:
            try:
                version = await self._watch(target, version)
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError, ApiFailure) as exc:
                self.warn(f"The watch of {target.describe()} broke ({exc or type(exc).__name__}); watching again.")
                await asyncio.sleep(RETRY_DELAY)
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError, ApiFailure):
                    version = await self._relist(target)

    async def _watch(self, target: _Target, version: str) -> str:
        params = {"resourceVersion": version, "allowWatchBookmarks": "true", "timeoutSeconds": str(WATCH_TIMEOUT)}
        async for event in self.api.watch(target.path, params):
            kind, obj = event.get("type"), event.get("object")
            if not isinstance(obj, dict):
                continue
            if kind == "ERROR":
                if target.recorded:
                    await self._write(target, "ERROR", obj)
                if obj.get("code") != 410:
                    self.warn(f"The watch of {target.describe()} failed: {obj.get('message') or obj}.")
                    await asyncio.sleep(RETRY_DELAY)
                return await self._relist(target)
            if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                continue
            version = str(meta(obj).get("resourceVersion") or version)
            if kind != "BOOKMARK":
                known = self._known.setdefault(target, {})
                if kind == "DELETED":
                    known.pop(_key(obj), None)
                else:
                    known[_key(obj)] = obj
            if target.recorded:
                await self._write(target, str(kind), obj)
            if (
                self.all_resources
                and (target.resource.group, target.resource.plural) == CRDS
                and kind in ("ADDED", "MODIFIED")
                and _established(obj)
            ):
                await self._discover_new()
        return version

    async def _write(self, target: _Target, kind: str, obj: JsonDict, *, relisted: bool = False) -> None:
        info = target.resource
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            await self._write_crd_of(info)
            self._seen.add(str(meta(obj).get("uid") or _key(obj)))
        t = asyncio.get_running_loop().time() - self._origin
        self.writer.write(t, info.group, info.version, info.plural, kind, obj, relisted=relisted)

    async def _write_crd_of(self, info: Served) -> None:
        """Before the first object of a custom resource, its CRD (as ADDED), unless the CRDs are recorded anyway.

        So that the log replays into a cluster that does not have the CRD (a replay creates it first), as the
        simulator's own recordings do. Once per resource: a built-in one has none (404); a CRD that the
        recorder may not read (403) is said once, and the log then needs the CRD in the target cluster.
        """
        key = (info.group, info.plural)
        if not info.group or key in self._crds_looked_up or self._records_crds:
            return
        self._crds_looked_up.add(key)
        code, crd = await self.api("GET", f"/apis/{CRDS[0]}/v1/{CRDS[1]}/{info.plural}.{info.group}")
        if code == 404 or not isinstance(crd, dict):
            return
        if code >= 400:
            self.warn(
                f"The CRD of {info.qualified} cannot be read ({code}): the log will need it in the replay's cluster."
            )
            return
        crd = {"apiVersion": f"{CRDS[0]}/v1", "kind": "CustomResourceDefinition", **crd}
        self._seen.add(str(meta(crd).get("uid") or _key(crd)))
        t = asyncio.get_running_loop().time() - self._origin
        self.writer.write(t, CRDS[0], "v1", CRDS[1], "ADDED", crd)


def _key(obj: JsonDict) -> tuple[str, str]:
    metadata = meta(obj)
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _established(crd: JsonDict) -> bool:
    conditions: Any = (crd.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions if isinstance(c, dict))


def count_of(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


async def record_until_stopped(
    capture: Capture,
    *,
    stop: asyncio.Event,
    duration: float | None = None,
    started: Callable[[CaptureStats], None] | None = None,
    progress: Callable[[CaptureStats], None] | None = None,
    interval: float = 0.5,
) -> CaptureStats:
    """Record until ``stop`` is set or ``duration`` seconds have passed; ``started`` is told once the current
    state is written and the watches begin, ``progress`` every ``interval`` seconds."""
    await capture.start()
    if started is not None:
        started(capture.stats())
    loop = asyncio.get_running_loop()
    deadline = None if duration is None else loop.time() + duration
    try:
        while not stop.is_set():
            remaining = interval if deadline is None else min(interval, deadline - loop.time())
            if remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), remaining)
            if progress is not None:
                progress(capture.stats())
    finally:
        await capture.stop()
    return capture.stats()
