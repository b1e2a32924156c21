"""Resource types: what the simulator serves, as discovery describes them.

A :class:`ResourceType` is one served group/version/plural. Objects of all versions of one
resource share one storage (keyed by group and plural), as in the real apiserver.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
StorageKey = tuple[str, str]  # (group, plural)


@dataclasses.dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""
    # Built-ins only: a cell "value/total" (e.g. a Deployment's READY "2/3"), and a value for absent fields
    # (Go's zero values: built-in counters print 0, not <none>).
    total_path: str = ""
    default: int | str | None = None
    # Built-ins only: a cell computed from the whole object, as the apiserver's printers do (a pod's STATUS).
    render: Callable[[dict[str, Any], datetime.datetime], Any] | None = None


@dataclasses.dataclass(frozen=True)
class ScalePaths:
    """Where the ``/scale`` subresource reads and writes its fields (JSON paths like ``.spec.replicas``)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None


_DERIVED = frozenset({"_hash", "api_version", "storage_key"})  # computed once per type, never pickled


@dataclasses.dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    verbs: tuple[str, ...] = ALL_VERBS
    has_generation: bool = False
    custom: bool = False  # a CRD-defined resource (no strategic merge patch, schema-driven)
    unconditional_update: bool = True  # may a PUT omit metadata.resourceVersion?
    schema: Mapping[str, Any] | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    field_selectors: frozenset[str] = frozenset()
    scale: ScalePaths | None = None
    storage_version: str = ""  # the version whose apiVersion stored objects carry
    preferred: bool = True
    deprecation_warning: str = ""  # sent with every response of a deprecated (CRD) version
    returns_deleted_object: bool = False  # a DELETE that removes the object answers with it, not with a Status

    def __hash__(self) -> int:
        """The hash of all fields (as the dataclass's own), computed once: types are cache keys of discovery."""
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, field.name) for field in dataclasses.fields(self)))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict[str, Any]:
        """Copies & pickles without what is derived and cached (string hashes differ from process to process)."""
        return {key: value for key, value in self.__dict__.items() if key not in _DERIVED}

    @functools.cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @functools.cached_property
    def storage_key(self) -> StorageKey:
        return (self.group, self.plural)

    @property
    def kind_key(self) -> str:
        """``apps/v1/Deployment`` or ``v1/Pod``: the key of the strategic-merge metadata table."""
        return f"{self.api_version}/{self.kind}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def names(self) -> set[str]:
        """Every name a client may use for this resource (lower case)."""
        return {self.plural, self.singular, self.kind.lower(), *self.short_names}


class Catalogue:
    """All served resource types, indexed for URL routing and discovery."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        # Bumped on every change, so that what is derived from the catalogue (discovery) can be cached.
        self.revision = 0
        for rtype in types:
            self.add(rtype)

    def add(self, rtype: ResourceType) -> None:
        self._types[(rtype.group, rtype.version, rtype.plural)] = rtype
        self.revision += 1

    def remove_resource(self, group: str, plural: str) -> list[ResourceType]:
        removed = [t for k, t in self._types.items() if k[0] == group and k[2] == plural]
        for rtype in removed:
            del self._types[(rtype.group, rtype.version, rtype.plural)]
        if removed:
            self.revision += 1
        return removed

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._types.values())

    def group_versions(self) -> dict[str, list[str]]:
        """Groups and their versions, preferred version first, in a stable order."""
        result: dict[str, list[str]] = {}
        for rtype in self._types.values():
            versions = result.setdefault(rtype.group, [])
            if rtype.version not in versions:
                if rtype.preferred:
                    versions.insert(0, rtype.version)
                else:
                    versions.append(rtype.version)
        return result

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self._types.values() if t.group == group and t.version == version]

    def for_storage(self, key: StorageKey) -> list[ResourceType]:
        return [t for t in self._types.values() if t.storage_key == key]

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        for rtype in self._types.values():
            if rtype.api_version == api_version and rtype.kind == kind:
                return rtype
        return None
