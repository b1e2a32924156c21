"""
Peering: the operators' awareness of each other, so that only one of them handles the objects.

Every operator keeps a record of itself in the ``status`` of a peering object, keyed by its
identity: ``{"priority": 100, "lifetime": 60, "lastseen": "2021-01-01T00:00:00+00:00"}``.
The cluster-wide operators use ``kind: ClusterKopfPeering``, the namespaced ones use
``kind: KopfPeering`` in every served namespace; the name is ``settings.peering.name``.

The record is refreshed (a "keep-alive") several times per its lifetime. A record is
considered dead once its last-seen time plus its lifetime has passed; the dead records
are removed by the alive operators. While there is an alive peer with a higher priority,
the operator is paused (its own toggle in ``operator_paused`` is on). The alive peers with
the same priority are a conflict: all of them warn and pause until the conflict is gone.

``kopf freeze`` is nothing but a fake peer with a (usually high) priority, a limited lifetime,
and an optional message; ``kopf resume`` removes that fake peer before it expires.

If the peering object is absent, the operator either pauses until it appears (for the mandatory
peering, e.g. with ``--peering=NAME``), or runs as if standalone (for the auto-detected one)
and starts peering if the object appears later. The ``kopf.zalando.org`` API group of the
older framework's versions is used if the ``kopf.dev`` resources are not served in the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import getpass
import logging
import os
import random
import socket
import string
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, NewType

import aiohttp

from kopf._cogs.aiokits import clock
from kopf._cogs.aiokits.toggles import Toggle, ToggleSet
from kopf._cogs.clients import api, errors, patching, watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import RawBody
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource

logger = logging.getLogger("kopf.engines.peering")

#: An operator's identity among its peers (a key in the peering object's status).
Identity = NewType("Identity", str)

#: The API groups of the peering resources: the current one first, then the legacy one.
PEERING_GROUPS = ("kopf.dev", "kopf.zalando.org")

#: The errors of the API requests that are only logged (and retried later), not escalated.
_RECOVERABLE_ERRORS: tuple[type[Exception], ...] = (errors.APIError, aiohttp.ClientError, asyncio.TimeoutError)

#: How long (seconds) to wait before looking for the unserved peering resources again.
ABSENCE_RETRY_DELAY = 10.0

#: How long (seconds) to wait before retrying a failed keep-alive or a failed watch.
ERROR_RETRY_DELAY = 5.0


def cluster_peering_resource(group: str = PEERING_GROUPS[0]) -> Resource:
    """The resource of the cluster-scoped peering objects (for the cluster-wide operators)."""
    return Resource(
        group, "v1", "clusterkopfpeerings", kind="ClusterKopfPeering", singular="clusterkopfpeering", namespaced=False
    )


def namespaced_peering_resource(group: str = PEERING_GROUPS[0]) -> Resource:
    """The resource of the namespace-scoped peering objects (for the namespaced operators)."""
    return Resource(group, "v1", "kopfpeerings", kind="KopfPeering", singular="kopfpeering", namespaced=True)


CLUSTER_PEERING_RESOURCE = cluster_peering_resource()
NAMESPACED_PEERING_RESOURCE = namespaced_peering_resource()


class PeeringNotFoundError(LookupError):
    """The peering object (or its resource) does not exist where it is needed (e.g. for freezing)."""


@dataclasses.dataclass(frozen=True)
class Peer:
    """One record in the peering object: a running operator, or a freeze (a fake operator)."""

    identity: str
    priority: int = 0
    lifetime: float = 60
    lastseen: datetime.datetime | None = None
    message: str | None = None

    def __repr__(self) -> str:
        # As the published framework shows the peers in its logs (the operators' tests may wait for them).
        lastseen = f", lastseen={self.lastseen.isoformat()!r}" if self.lastseen is not None else ""
        extra = f", message={self.message!r}" if self.message else ""
        return f"<Peer {self.identity}: priority={self.priority}, lifetime={self.lifetime:g}{lastseen}{extra}>"

    @property
    def deadline(self) -> datetime.datetime | None:
        """When the record expires if not refreshed (``None`` if unknown)."""
        if self.lastseen is None:
            return None
        return self.lastseen + datetime.timedelta(seconds=self.lifetime)

    def is_dead(self, now: datetime.datetime) -> bool:
        deadline = self.deadline
        return deadline is not None and deadline <= now

    def as_dict(self) -> dict[str, Any]:
        lifetime: float = int(self.lifetime) if float(self.lifetime).is_integer() else self.lifetime
        data: dict[str, Any] = {"priority": self.priority, "lifetime": lifetime}
        if self.lastseen is not None:
            data["lastseen"] = self.lastseen.isoformat()
        if self.message is not None:
            data["message"] = self.message
        return data

    @classmethod
    def parse(cls, identity: str, raw: Any) -> Peer | None:
        """Parse a record from the peering object; ``None`` if it is not a peer's record at all."""
        if not isinstance(raw, Mapping):
            return None
        try:
            priority = int(raw.get("priority", 0))
            lifetime = float(raw.get("lifetime", 60))
        except (TypeError, ValueError):
            return None
        lastseen = _parse_timestamp(raw.get("lastseen"))
        message = raw.get("message")
        return cls(
            identity=identity,
            priority=priority,
            lifetime=lifetime,
            lastseen=lastseen,
            message=str(message) if message is not None else None,
        )


def _parse_timestamp(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


def parse_peers(body: Mapping[str, Any] | None) -> list[Peer]:
    """All peers' records of a peering object (the malformed records are ignored)."""
    status = (body or {}).get("status")
    if not isinstance(status, Mapping):
        return []
    peers = [Peer.parse(str(identity), raw) for identity, raw in status.items()]
    return [peer for peer in peers if peer is not None]


def detect_own_id(*, manual: bool = False) -> Identity:
    """
    An identity of this operator process among its peers.

    The manual identity (for ``kopf freeze``/``kopf resume``, run by humans) is the same
    every time: ``user@host``, so that resuming removes what freezing has added.
    The operator's identity is unique per process: ``user@host/pid/xxxx`` (the hostname
    in the pods is the pod's name; the random suffix distinguishes the restarted processes).
    """
    try:
        user = getpass.getuser()
    except Exception:  # no such user in the containers with arbitrary uids, etc.
        user = f"uid{os.getuid()}" if hasattr(os, "getuid") else "unknown"
    host = _descriptive_hostname()
    if manual:
        return Identity(f"{user}@{host}")
    suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=4))
    return Identity(f"{user}@{host}/{os.getpid()}/{suffix}")


def _descriptive_hostname() -> str:
    host = os.environ.get("POD_NAME") or socket.gethostname() or "localhost"
    for tail in (".local", ".localdomain"):
        if host.endswith(tail) and host != tail:
            host = host[: -len(tail)]
    return host


def keepalive_interval(lifetime: float) -> float:
    """How often the own record is refreshed: twice per lifetime, so that one lost keep-alive is survived."""
    return max(1.0, float(lifetime) / 2)


async def discover_peering_resource(
    *,
    settings: OperatorSettings,
    clusterwide: bool,
    namespace: str | None,
    vault: Vault | None = None,
) -> Resource | None:
    """
    Which of the peering resources is served in the cluster: ``kopf.dev`` or the legacy group.

    Returns ``None`` if none is served (e.g. the CRDs are not applied).
    """
    for group in PEERING_GROUPS:
        resource = cluster_peering_resource(group) if clusterwide else namespaced_peering_resource(group)
        try:
            discovery = await api.get(
                f"/apis/{group}/{resource.version}", settings=settings, logger=logger, vault=vault
            )
        except errors.APINotFoundError:
            continue
        names = {
            str(item.get("name")) for item in (discovery or {}).get("resources") or [] if isinstance(item, Mapping)
        }
        if resource.plural not in names:
            continue
        if f"{resource.plural}/status" in names:
            resource = dataclasses.replace(resource, subresources=frozenset({"status"}))
        return resource
    return None


def _where(clusterwide: bool, namespace: str | None, name: str) -> str:
    return f"cluster-wide {name!r}" if clusterwide else f"{name!r} in {namespace!r}"


@dataclasses.dataclass
class _View:
    """What the watcher knows about the peering object so far."""

    known: bool = False  # is the first listing (or the absence of the resource) known yet?
    served: bool = True  # is the peering resource served in the cluster at all?
    body: RawBody | None = None  # the latest state of the peering object, if it exists.


class _Peering:
    """One operator's peering in one peering object (cluster-wide, or in one namespace)."""

    def __init__(
        self,
        *,
        settings: OperatorSettings,
        identity: str,
        namespace: str | None,
        clusterwide: bool,
        toggle: Toggle,
        vault: Vault | None,
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.namespace = None if clusterwide else namespace
        self.clusterwide = clusterwide
        self.name = settings.peering.name
        self.toggle = toggle
        self.vault = vault
        self.resource: Resource | None = None
        self.view = _View()
        self.changed = asyncio.Event()
        self.where = _where(clusterwide, self.namespace, self.name)
        self._reported: tuple[Any, ...] | None = None  # the last logged situation, to not log it repeatedly
        self._conflicts: frozenset[str] = frozenset()
        self._touched = False
        self._decided = False

    # The watcher: keeps the view of the peering object up to date, wakes the main loop on changes.

    async def watch(self) -> None:
        while True:
            try:
                resource = await discover_peering_resource(
                    settings=self.settings, clusterwide=self.clusterwide, namespace=self.namespace, vault=self.vault
                )
                if resource is None:
                    self._update(served=False, body=None)
                    await asyncio.sleep(ABSENCE_RETRY_DELAY)
                    continue
                self.resource = resource
                await self._stream(resource)
            except errors.APINotFoundError:
                self._update(served=False, body=None)  # the CRD is gone while watching
            except _RECOVERABLE_ERRORS as e:
                logger.error(f"Failed to watch the peering {self.where}: {e}")
            await asyncio.sleep(ERROR_RETRY_DELAY)

    async def _stream(self, resource: Resource) -> None:
        present: RawBody | None = None
        async for event in watching.infinite_watch(
            resource=resource,
            namespace=self.namespace,
            settings=self.settings,
            markers=True,
            logger=logger,
            vault=self.vault,
        ):
            if event is watching.Bookmark.LISTED:
                self._update(served=True, body=present)
                continue
            if isinstance(event, watching.Bookmark):
                continue
            body = event["object"]
            if body.get("metadata", {}).get("name") != self.name:
                continue
            present = None if event["type"] == "DELETED" else body
            if self.view.known:
                self._update(served=True, body=present)

    def _update(self, *, served: bool, body: RawBody | None) -> None:
        self.view = _View(known=True, served=served, body=body)
        self.changed.set()

    # The main loop: keep-alives, decisions on pausing, cleanups of the dead peers.

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        next_touch: float | None = None  # when to refresh the own record; None: as soon as the object exists
        while True:
            self.changed.clear()
            present = self.view.known and self.view.served and self.view.body is not None
            if not present:
                next_touch = None
            elif next_touch is None or loop.time() >= next_touch:
                touched = await self.touch()
                lifetime = self.settings.peering.lifetime
                interval = keepalive_interval(lifetime)
                next_touch = loop.time() + (interval if touched else min(ERROR_RETRY_DELAY, interval))

            wake_at = await self.decide()
            deadlines = [t for t in (next_touch, wake_at) if t is not None]
            timeout = max(0.0, min(deadlines) - loop.time()) if deadlines else None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self.changed.wait()

    async def touch(self) -> bool:
        """Refresh the own record in the peering object (a keep-alive); return whether it succeeded."""
        if self.resource is None:
            return False
        own = Peer(
            identity=self.identity,
            priority=self.settings.peering.priority,
            lifetime=self.settings.peering.lifetime,
            lastseen=clock.utcnow(),
        )
        try:
            body = await patching.patch_obj(
                resource=self.resource,
                namespace=self.namespace,
                name=self.name,
                patch={"status": {self.identity: own.as_dict()}},
                settings=self.settings,
                logger=logger,
                vault=self.vault,
            )
        except _RECOVERABLE_ERRORS as e:
            logger.error(f"Failed to send a keep-alive to the peering {self.where}: {e}")
            return False
        if body is None:
            return False  # the object has gone; the watcher will notice it soon
        self._touched = True
        if not self.settings.peering.stealth:
            logger.debug(f"Keep-alive in the peering {self.where}: ok.")
        return True

    async def decide(self) -> float | None:
        """Pause or unpause according to the alive peers; return the loop time to re-decide at (if any)."""
        view = self.view
        mandatory = self.settings.peering.mandatory
        if not view.known:
            return None  # stay as we are (paused) until the first listing is done

        if not view.served or view.body is None:
            what = "resource is not served" if not view.served else "object is not found"
            if mandatory:
                self._report(
                    ("absent", what),
                    logging.ERROR,
                    f"The mandatory peering {self.where} is absent (the {what}); pausing until it appears.",
                )
                await self._turn(True, "the mandatory peering is absent")
            else:
                self._report(
                    ("absent", what),
                    logging.WARNING,
                    f"The peering {self.where} is absent (the {what}); falling back to the standalone mode.",
                )
                await self._turn(False, "the peering is absent, running standalone")
            return None

        now = clock.utcnow()
        own_priority = self.settings.peering.priority
        peers = [peer for peer in parse_peers(view.body) if peer.identity != self.identity]
        dead = [peer for peer in peers if peer.is_dead(now)]
        alive = [peer for peer in peers if not peer.is_dead(now)]
        higher = [peer for peer in alive if peer.priority > own_priority]
        same = [peer for peer in alive if peer.priority == own_priority]

        if dead:
            await self._cleanup(dead)

        conflicts = frozenset(peer.identity for peer in same)
        if conflicts and conflicts != self._conflicts:
            logger.warning(
                f"Possibly conflicting operators with the same priority {own_priority} "
                f"in the peering {self.where}: {same}; all of them pause."
            )
        self._conflicts = conflicts

        if higher:
            self._report(
                ("higher", frozenset(peer.identity for peer in higher)),
                logging.INFO,
                f"Pausing operations in favour of {higher}.",
            )
            await self._turn(True, "a peer with a higher priority is alive")
        elif same:
            self._report(
                ("same", conflicts),
                logging.INFO,
                f"Pausing operations because of the same-priority peers {same} in the peering {self.where}.",
            )
            await self._turn(True, "peers with the same priority are alive")
        else:
            self._report(("clear",), logging.DEBUG, f"No higher or same priority peers in the peering {self.where}.")
            await self._turn(False, "no peers with the higher or same priorities are alive")

        deadlines = [peer.deadline for peer in alive if peer.deadline is not None]
        if not deadlines:
            return None
        # A tiny margin past the deadline: so that the record is surely dead by then (no spinning on rounding).
        seconds = (min(deadlines) - now).total_seconds() + 0.001
        return asyncio.get_running_loop().time() + max(0.0, seconds)

    async def _turn(self, paused: bool, reason: str) -> None:
        first = not self._decided
        self._decided = True
        if self.toggle.is_on() == paused:
            return
        if first and not paused:
            logger.debug(f"Starting the operator: {reason} (the peering {self.where}).")
        elif paused:
            logger.debug(f"Pausing the operator: {reason} (the peering {self.where}).")
        else:
            logger.debug(f"Resuming the operator: {reason} (the peering {self.where}).")
            logger.info(
                "Resuming operations after the pause. "  # as the published framework words it
                "Conflicting operators with the same priority are gone."
            )
        await self.toggle.turn_to(paused)

    def _report(self, situation: tuple[Any, ...], level: int, message: str) -> None:
        if situation != self._reported:
            self._reported = situation
            logger.log(level, message)

    async def _cleanup(self, dead: list[Peer]) -> None:
        if self.resource is None:
            return
        logger.info(f"Cleaning up the dead peers from the peering {self.where}: {dead}")
        try:
            await patching.patch_obj(
                resource=self.resource,
                namespace=self.namespace,
                name=self.name,
                patch={"status": {peer.identity: None for peer in dead}},
                settings=self.settings,
                logger=logger,
                vault=self.vault,
            )
        except _RECOVERABLE_ERRORS as e:
            logger.warning(f"Failed to clean up the dead peers from the peering {self.where}: {e}")

    async def disappear(self) -> None:
        """Remove the own record from the peering object (on exit), so that others do not wait for its expiry."""
        if self.resource is None or not self._touched:
            return
        try:
            await patching.patch_obj(
                resource=self.resource,
                namespace=self.namespace,
                name=self.name,
                patch={"status": {self.identity: None}},
                settings=self.settings,
                logger=logger,
                vault=self.vault,
            )
        except _RECOVERABLE_ERRORS as e:
            logger.warning(f"Failed to remove the own record from the peering {self.where}: {e}")
        else:
            logger.debug(f"The own record is removed from the peering {self.where}.")


async def run_peering(
    *,
    settings: OperatorSettings,
    identity: str,
    namespace: str | None,
    clusterwide: bool,
    operator_paused: ToggleSet,
    vault: Vault | None = None,
) -> None:
    """
    Keep this operator in the peering (cluster-wide or in one namespace) until cancelled.

    A toggle of its own is added to ``operator_paused``: it is on (paused) at the start
    until the peering object is seen, and later while a peer with a higher priority (or a freeze),
    or a peer with the same priority, is alive; or while the mandatory peering object is absent.
    On exit (cancellation), the own record is removed from the peering object and the toggle is dropped.
    In the standalone mode (``settings.peering.standalone``), nothing is done: it only waits to be cancelled.
    """
    if settings.peering.standalone:
        logger.debug("Peering is disabled: the operator runs standalone.")
        await asyncio.Event().wait()
        return
    if not clusterwide and namespace is None:
        raise ValueError("The namespaced peering needs a namespace (or use the cluster-wide peering).")

    where = _where(clusterwide, namespace, settings.peering.name)
    toggle = await operator_paused.make_toggle(True, name=f"peering {where}")
    peering = _Peering(
        settings=settings, identity=identity, namespace=namespace, clusterwide=clusterwide, toggle=toggle, vault=vault
    )
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(peering.watch(), name=f"peering watcher of {where}")
            tg.create_task(peering.run(), name=f"peering keep-alives of {where}")
    finally:
        try:
            await peering.disappear()
        finally:
            await operator_paused.drop_toggle(toggle)


def _targets(namespaces: Iterable[str] | None, clusterwide: bool) -> list[str | None]:
    """Where to freeze/resume: the cluster (``None``), or every given namespace."""
    names = list(namespaces or ())
    if clusterwide or not names:
        return [None]
    return list(dict.fromkeys(names))


async def freeze(
    *,
    settings: OperatorSettings,
    namespaces: Iterable[str] | None,
    clusterwide: bool,
    identity: str,
    priority: int,
    lifetime: float,
    message: str | None,
    peering_name: str,
    vault: Vault | None = None,
) -> None:
    """
    Pause the operators of a peering for a lifetime: add a fake peer with the given priority.

    The operators with the lower priorities pause until the record expires or is removed
    by :func:`resume` (with the same identity). Without namespaces, or with ``clusterwide``,
    the cluster-wide peering is used; otherwise, the namespaced peering in every namespace.
    Raises :class:`PeeringNotFoundError` if a peering object is absent (the others are frozen anyway).
    """
    record = Peer(identity=identity, priority=priority, lifetime=lifetime, lastseen=clock.utcnow(), message=message)
    missing: list[str] = []
    patched = _patch_peerings(
        settings=settings,
        namespaces=namespaces,
        clusterwide=clusterwide,
        peering_name=peering_name,
        status={identity: record.as_dict()},
        vault=vault,
    )
    async for where, body in patched:
        if body is None:
            missing.append(where)
        else:
            logger.info(
                f"Freezing the operators in the peering {where} for {lifetime:g}s "
                f"with priority {priority}" + (f": {message}" if message else ".")
            )
    if missing:
        raise PeeringNotFoundError(f"The peering objects are not found: {', '.join(missing)}.")


async def resume(
    *,
    settings: OperatorSettings,
    namespaces: Iterable[str] | None,
    clusterwide: bool,
    identity: str,
    peering_name: str,
    vault: Vault | None = None,
) -> None:
    """
    Resume the operators frozen by :func:`freeze` with the same identity: remove that fake peer.

    The absent peering objects are only warned about: there is nothing frozen there.
    """
    patched = _patch_peerings(
        settings=settings,
        namespaces=namespaces,
        clusterwide=clusterwide,
        peering_name=peering_name,
        status={identity: None},
        vault=vault,
    )
    async for where, body in patched:
        if body is None:
            logger.warning(f"The peering {where} is not found; nothing to resume there.")
        else:
            logger.info(f"Resuming the operators in the peering {where}.")


async def _patch_peerings(
    *,
    settings: OperatorSettings,
    namespaces: Iterable[str] | None,
    clusterwide: bool,
    peering_name: str,
    status: Mapping[str, Any],
    vault: Vault | None,
) -> AsyncIterator[tuple[str, RawBody | None]]:
    """Patch the status of every targeted peering object; yield where, and the body (None if absent)."""
    for namespace in _targets(namespaces, clusterwide):
        is_cluster = namespace is None
        resource = await discover_peering_resource(
            settings=settings, clusterwide=is_cluster, namespace=namespace, vault=vault
        )
        body = None
        if resource is not None:
            body = await patching.patch_obj(
                resource=resource,
                namespace=namespace,
                name=peering_name,
                patch={"status": dict(status)},
                settings=settings,
                logger=logger,
                vault=vault,
            )
        yield _where(is_cluster, namespace, peering_name), body


__all__ = [
    "CLUSTER_PEERING_RESOURCE",
    "NAMESPACED_PEERING_RESOURCE",
    "Identity",
    "Peer",
    "PeeringNotFoundError",
    "cluster_peering_resource",
    "detect_own_id",
    "discover_peering_resource",
    "freeze",
    "keepalive_interval",
    "namespaced_peering_resource",
    "parse_peers",
    "resume",
    "run_peering",
]
