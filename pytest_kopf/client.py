"""What a test can do with its cluster in both modes: the protocols that ``kopf_cluster`` implements.

Split as controller-runtime splits its client (``Reader``, ``Writer``, and the client that is both):
a helper that only reads (a check of the end state) takes a :class:`Reader`; one that drives the cluster
takes a :class:`Client`. Both modes implement all of it (:class:`pytest_kopf.cluster.KopfCluster`);
what only a simulated cluster can do (faults, virtual time, the store, the built-in controllers) is not
here, but on ``kopf_cluster.sim`` (:class:`pytest_kopf.simcontrols.SimControls`).

Resources are named as kubectl names them: plural (``pods``), ``plural.group``
(``kopfexamples.kopf.dev``), singular, short name, or kind. Namespaced objects given without a
namespace go to :attr:`Reader.namespace`. API errors raise :class:`~pytest_kopf.errors.KopfApiError`.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kopf_sim.recording.replaying import Bookkeeping, Replay, WatchLog

    from ._discovery import ResourceInfo

__all__ = ["Client", "Condition", "JsonDict", "JsonList", "Manifests", "Reader", "Writer"]

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
#: What ``wait_for()`` checks: the object, or None while it is absent; lookup errors count as "not yet".
Condition = Callable[[JsonDict | None], object]
#: What ``apply()`` takes: a file's path, a YAML text, an object, or a list of objects.
Manifests = str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]]


class Reader(Protocol):
    """Reading the cluster: objects, their events, and waiting for their states."""

    #: ``"sim"`` or ``"real"``.
    mode: str
    #: The namespace of the objects given without one: ``default`` in sim mode, the test's own in real mode.
    namespace: str

    async def resolve(self, resource: str | ResourceInfo) -> ResourceInfo:
        """The served resource for a plural, ``plural.group``, singular, short name, or kind."""
        ...

    async def get(self, resource: str | ResourceInfo, name: str, namespace: str | None = None) -> JsonDict | None:
        """The object, or None if it does not exist."""
        ...

    async def list(
        self,
        resource: str | ResourceInfo,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | str | None = None,
        all_namespaces: bool = False,
    ) -> JsonList:
        """The objects of a resource in a namespace (or in all), optionally selected by labels."""
        ...

    async def events(self, resource: str | ResourceInfo, name: str, namespace: str | None = None) -> JsonList:
        """The ``kind: Event`` objects (core/v1) about an object, in the server's order."""
        ...

    async def wait_for(
        self,
        resource: str | ResourceInfo,
        name: str,
        namespace: str | None = None,
        *,
        condition: Condition | None = None,
        timeout: float = ...,
    ) -> JsonDict | None:
        """Wait until the condition holds for the object (given None while it is absent); return it."""
        ...

    async def wait_gone(
        self, resource: str | ResourceInfo, name: str, namespace: str | None = None, *, timeout: float = ...
    ) -> None:
        """Wait until the object does not exist."""
        ...


class Writer(Protocol):
    """Writing to the cluster: manifests and single objects."""

    async def apply(self, manifests: Manifests) -> JsonList:
        """Create the objects, or merge-patch those that exist (as ``kubectl apply``); CRDs get served."""
        ...

    async def create(self, body: Mapping[str, Any]) -> JsonDict:
        """Create an object."""
        ...

    async def patch(
        self,
        resource: str | ResourceInfo,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JsonDict:
        """Merge-patch an object (or its ``status`` or ``scale`` subresource); returns the result."""
        ...

    async def delete(
        self,
        resource: str | ResourceInfo,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
    ) -> JsonDict:
        """Request the deletion (finalizers may hold the object)."""
        ...


class Client(Reader, Writer, Protocol):
    """The whole of ``kopf_cluster`` in both modes: reading, writing, replaying logs, serving subprocesses."""

    async def prepare_replay(
        self,
        log: str | os.PathLike[str] | WatchLog,
        *,
        until: float | None = None,
        resources: Iterable[str] | None = None,
        namespace: str | None = None,
        bookkeeping: Bookkeeping = ...,
    ) -> Replay:
        """Read a watch-event log, check it against the cluster, and plan its changes; nothing is written yet."""
        ...

    async def replay(
        self,
        log: str | os.PathLike[str] | WatchLog,
        *,
        speed: float | None = 1.0,
        until: float | None = None,
        resources: Iterable[str] | None = None,
        quiet: float = 1.0,
        namespace: str | None = None,
        bookkeeping: Bookkeeping = ...,
    ) -> Replay:
        """Write the changes of a watch-event log into the cluster, at their relative times; return when done."""
        ...

    async def kubeconfig(self) -> pathlib.Path:
        """A kubeconfig of this cluster for other processes (kubectl, ``kopf run``)."""
        ...

    def forget_discovery(self) -> None:
        """Drop the cached discovery (done automatically after CRDs are applied or deleted)."""
        ...
