"""What admission decides on: a write's attributes as the apiserver's admission sees them, and the store's view."""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Iterator
from typing import Protocol

from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import Catalogue, ResourceType, StorageKey
from kopf_sim.timing.clock import UidFactory

__all__ = ["ADMIN", "REQUESTING_USER", "Attributes", "GroupVersionKind", "StoreView"]

GroupVersionKind = tuple[str, str, str]

#: Who makes a request that no one else is known to make: the kubeconfig's cluster admin.
ADMIN: JsonDict = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}

#: The user of the request being handled (set by the HTTP layer, which authenticates it), for ``userInfo``.
REQUESTING_USER: contextvars.ContextVar[JsonDict | None] = contextvars.ContextVar("requesting_user", default=None)


def _requesting_user() -> JsonDict:
    return dict(REQUESTING_USER.get() or ADMIN)


@dataclasses.dataclass(frozen=True)
class Attributes:
    """A write request as admission sees it (the apiserver's ``admission.Attributes``)."""

    rtype: ResourceType  # the resource the request addressed: its group, version and plural
    operation: str  # CREATE, UPDATE, DELETE
    namespace: str | None
    name: str  # empty for a create with ``generateName`` and for the items of a collection deletion
    subresource: str | None
    dry_run: bool
    options: JsonDict  # CreateOptions, UpdateOptions or DeleteOptions, as sent to webhooks
    kind: GroupVersionKind | None = None  # the objects' kind, if not the resource's (a ``scale`` is a Scale)
    user_info: JsonDict = dataclasses.field(default_factory=_requesting_user)

    @property
    def gvk(self) -> GroupVersionKind:
        return self.kind or (self.rtype.group, self.rtype.version, self.rtype.kind)


class StoreView(Protocol):
    """What admission reads of the store: webhook configurations, namespaces (selectors), versions, uids."""

    @property
    def uids(self) -> UidFactory: ...

    @property
    def catalogue(self) -> Catalogue: ...

    def peek(self, key: StorageKey, namespace: str | None, name: str) -> JsonDict | None: ...

    def objects(self, key: StorageKey, namespace: str | None = None) -> Iterator[JsonDict]: ...

    def count(self, key: StorageKey | None = None) -> int: ...
