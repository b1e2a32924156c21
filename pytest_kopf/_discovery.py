"""What a cluster serves, as ``kopf_cluster`` needs it to resolve resource names like kubectl.

Aggregated discovery (``apidiscovery.k8s.io/v2``, served by Kubernetes 1.26+) brings every
group, version and resource in two responses (``/api`` and ``/apis``), so a test resolves
its resources with two requests, and one more after each change of CRDs. A server without
it answers the legacy lists, and those are fetched per group-version as needed.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Awaitable, Callable, Mapping

from kopf import Resource
from kopf._kits.testing import AGGREGATED_DISCOVERY_ACCEPT, DiscoveryDocument, decode_discovery, parse_resource_list

__all__ = ["Discovery", "Fetch", "ResourceInfo"]

#: GET a path with extra headers; the response's body, or None if the path is not served (404, 503).
Fetch = Callable[[str, Mapping[str, str]], Awaitable[bytes | None]]


@dataclasses.dataclass(frozen=True)
class ResourceInfo:
    """One served resource, as discovery describes it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``plural.group`` (or ``plural`` for the core group), as kubectl names it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if namespace is not None and self.namespaced:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
            if subresource is not None:
                parts.append(subresource)
        return "/".join(parts)

    @functools.cached_property
    def _names(self) -> frozenset[str]:
        return frozenset({self.plural, self.singular, self.kind.lower(), *self.short_names} - {""})

    def names(self) -> frozenset[str]:
        """The names that kubectl accepts for this resource (lower-case; the kind is matched as is elsewhere)."""
        return self._names

    @classmethod
    def from_kopf(cls, resource: Resource) -> ResourceInfo:
        return cls(
            group=resource.group,
            version=resource.version,
            plural=resource.plural,
            kind=resource.kind or "",
            namespaced=bool(resource.namespaced),
            singular=resource.singular or "",
            short_names=tuple(sorted(resource.shortcuts)),
        )


class Discovery:
    """The cluster's resources by group-version, cached until :meth:`forget` (after CRD changes)."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._core_aggregated = False
        self._groups_aggregated = False
        self._preferred: list[str] | None = None  # "v1", then each group's preferred version
        self._by_group: dict[str, str] = {}  # group -> its preferred groupVersion
        self._served: dict[str, list[ResourceInfo] | None] = {}  # groupVersion -> resources (None: not served)

    def forget(self, group: str | None = None) -> None:
        """Drop what is known of the named API groups (all of them: one document lists them all).

        The core group is dropped too only if ``group`` is ``""`` or None: CRDs never change it.
        """
        self._preferred = None
        self._by_group = {}
        self._groups_aggregated = False
        if group == "" or group is None:
            self._core_aggregated = False
        self._served = {gv: infos for gv, infos in self._served.items() if "/" not in gv and self._core_aggregated}

    async def preferred_versions(self) -> list[str]:
        """The preferred groupVersion of every group, the core ``v1`` first, in the server's order."""
        if self._preferred is None:
            await self._load()
        assert self._preferred is not None
        return self._preferred

    async def preferred_of(self, group: str) -> str | None:
        await self.preferred_versions()
        return self._by_group.get(group)

    async def group_version(self, group_version: str) -> list[ResourceInfo] | None:
        """The resources of one groupVersion, or None if it is not served."""
        if self._preferred is None:
            await self._load()
        if group_version not in self._served:
            aggregated = self._groups_aggregated if "/" in group_version else self._core_aggregated
            if aggregated:
                return None  # the aggregated document lists everything served
            path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
            body = await self._fetch(path, {})
            group, _, version = group_version.rpartition("/")
            self._served[group_version] = (
                None
                if body is None
                else [
                    ResourceInfo.from_kopf(resource)
                    for resource in parse_resource_list(group, version, False, json.loads(body) if body.strip() else {})
                ]
            )
        return self._served[group_version]

    async def _load(self) -> None:
        if not self._core_aggregated:
            core = await self._document("/api")
            if core.resources:
                self._keep(core)
                self._core_aggregated = True
        preferred, by_group = ["v1"], {}
        groups = await self._document("/apis")
        if groups.resources:
            self._keep(groups)
            self._groups_aggregated = True
            for resource in groups.resources:
                if resource.preferred and resource.group not in by_group:
                    by_group[resource.group] = f"{resource.group}/{resource.version}"
                    preferred.append(by_group[resource.group])
        else:
            for group in groups.doc.get("groups") or ():
                version = (group.get("preferredVersion") or {}).get("groupVersion")
                if not version and group.get("versions"):
                    version = group["versions"][0].get("groupVersion")
                if version:
                    preferred.append(version)
                    by_group[group.get("name", "")] = version
        self._preferred, self._by_group = preferred, by_group

    async def _document(self, path: str) -> DiscoveryDocument:
        body = await self._fetch(path, AGGREGATED_DISCOVERY_ACCEPT)
        return decode_discovery(body if body is not None else b"")

    def _keep(self, document: DiscoveryDocument) -> None:
        for group_version, infos in _by_group_version(document).items():
            self._served[group_version] = list(infos)


@functools.lru_cache(maxsize=32)
def _by_group_version(document: DiscoveryDocument) -> dict[str, tuple[ResourceInfo, ...]]:
    """The resources of an aggregated document by groupVersion (once per document: they repeat)."""
    grouped: dict[str, list[ResourceInfo]] = {}
    for resource in document.resources:
        group_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
        grouped.setdefault(group_version, []).append(ResourceInfo.from_kopf(resource))
    return {group_version: tuple(infos) for group_version, infos in grouped.items()}
