"""
Scanning the cluster: the served resources (API discovery) and the namespaces.

The discovery asks ``/api`` and ``/apis`` for the aggregated documents first (all the
resources in two responses); servers without them answer the legacy documents: the
group-versions (and the preferred version of every group), then ``/api/v1`` and
``/apis/{group}/{version}`` for the resources with their kinds, names, short names,
categories, verbs, scopes, and subresources (listed as ``plural/subresource``).
Identical responses (every restart, every CRD change) are decoded only once.
Group-versions that fail (e.g. an aggregated API that is unavailable, or forbidden)
are skipped with a warning: one broken API must not block the whole operator.

The results can be cached in a :class:`DiscoveryCache` and refreshed when needed
(e.g. when the custom resource definitions change). The selectors of the handlers
are resolved against the discovered resources as documented in :class:`Selector`.

The namespaces are listed to resolve the namespace patterns (globs, negations);
without the permissions for that, only the exact namespace names are used.
Whether to scan at all (``settings.scanning.disabled``) is honoured for the namespaces;
for the resources, it is up to the callers (they may not be able to do without it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

import aiohttp

from kopf._cogs.clients import api, errors, fetching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import (
    NamespacePattern,
    Resource,
    Selector,
    match_namespaces,
    select_specific_namespaces,
)

NAMESPACES_RESOURCE = Resource(
    "", "v1", "namespaces", kind="Namespace", namespaced=False, verbs=frozenset({"list", "watch", "get"})
)

#: The errors of one group-version that are skipped in the discovery (other ones escalate).
SKIPPABLE_ERRORS: tuple[type[BaseException], ...] = (
    errors.APINotFoundError,
    errors.APIForbiddenError,
    errors.APIServerError,
    aiohttp.ClientError,
    asyncio.TimeoutError,
)


async def discover(
    *,
    settings: OperatorSettings,
    groups: Collection[str] | None = None,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> list[Resource]:
    """
    Discover all the served resources (of all versions), optionally only of some API groups.

    The core API is the group ``''``. The resources are in the order of discovery.
    """
    logger = logger if logger is not None else api.default_logger
    # (group, version, is_preferred)
    group_versions: list[tuple[str, str, bool]] = []
    aggregated: list[Resource] = []

    if groups is None or "" in groups:
        core: DiscoveryDocument = await api.get(
            "/api", settings=settings, logger=logger, vault=vault, headers=AGGREGATED_ACCEPT, decode=decode_discovery
        )
        aggregated.extend(_in_groups(core.resources, groups))
        # the core API has one version, which is preferred.
        group_versions.extend(("", version, True) for version in core.doc.get("versions") or [])

    if groups is None or any(group for group in groups):
        rsp: DiscoveryDocument = await api.get(
            "/apis", settings=settings, logger=logger, vault=vault, headers=AGGREGATED_ACCEPT, decode=decode_discovery
        )
        aggregated.extend(_in_groups(rsp.resources, groups))
        group_versions.extend(_listed_group_versions(rsp.doc, groups))

    results = await asyncio.gather(
        *(_fetch_resource_list(g, v, p, settings=settings, logger=logger, vault=vault) for g, v, p in group_versions)
    )
    return aggregated + [resource for resources in results for resource in resources]


def _in_groups(resources: Iterable[Resource], groups: Collection[str] | None) -> list[Resource]:
    return [resource for resource in resources if groups is None or resource.group in groups]


async def _fetch_resource_list(
    group: str,
    version: str,
    preferred: bool,
    *,
    settings: OperatorSettings,
    logger: api.Logger,
    vault: Vault | None,
) -> list[Resource]:
    """The resources of one group's version (the legacy discovery); none if the API is unavailable."""
    url = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        rsp = await api.get(url, settings=settings, logger=logger, vault=vault) or {}
    except SKIPPABLE_ERRORS as e:
        logger.warning(f"Skipping the API {group or 'core'}/{version} in the discovery: {e!r}")
        return []
    return parse_resource_list(group, version, preferred, rsp)


def _listed_group_versions(doc: Mapping[str, Any], groups: Collection[str] | None) -> Iterator[tuple[str, str, bool]]:
    """The groups' versions of a legacy ``/apis`` list (APIGroupList), and whether each is the preferred one."""
    for group_info in doc.get("groups") or []:
        group = group_info.get("name", "")
        if groups is not None and group not in groups:
            continue
        preferred = (group_info.get("preferredVersion") or {}).get("version")
        versions = [v.get("version") for v in group_info.get("versions") or [] if v.get("version")]
        if preferred is None and versions:
            preferred = versions[0]
        for version in versions:
            yield group, version, version == preferred


#: Aggregated discovery (one response for all groups) first; servers without it answer the legacy lists.
AGGREGATED_KIND = "APIGroupDiscoveryList"
AGGREGATED_ACCEPT = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"}


@dataclasses.dataclass(frozen=True, eq=False)
class DiscoveryDocument:
    """A decoded ``/api`` or ``/apis`` response: the resources if aggregated, else the legacy document.

    The documents are shared by everyone who got the same bytes (see :func:`decode_discovery`):
    read them, never change them. They compare & hash by identity.
    """

    resources: tuple[Resource, ...]  # of an aggregated document (APIGroupDiscoveryList), else empty
    doc: Mapping[str, Any]  # of a legacy document (APIVersions, APIGroupList), else empty


@functools.lru_cache(maxsize=32)
def decode_discovery(body: bytes) -> DiscoveryDocument:
    """Decode a discovery response once per distinct body: they repeat byte for byte (restarts, CRD changes)."""
    rsp = json.loads(body) if body.strip() else {}
    if not isinstance(rsp, Mapping):
        return DiscoveryDocument(resources=(), doc={})
    if rsp.get("kind") == AGGREGATED_KIND:
        return DiscoveryDocument(resources=tuple(parse_aggregated(rsp, None)), doc={})
    return DiscoveryDocument(resources=(), doc=rsp)


def parse_aggregated(rsp: Mapping[str, Any], groups: Collection[str] | None) -> list[Resource]:
    """Convert an ``apidiscovery.k8s.io/v2 APIGroupDiscoveryList`` into resources (preferred version first)."""
    resources: list[Resource] = []
    for item in rsp.get("items") or []:
        group = str((item.get("metadata") or {}).get("name") or "")
        if groups is not None and group not in groups:
            continue
        for index, version_info in enumerate(item.get("versions") or []):
            version = str(version_info.get("version") or "")
            for entry in version_info.get("resources") or []:
                if not isinstance(entry, Mapping) or not entry.get("resource"):
                    continue
                resources.append(
                    Resource(
                        group=group,
                        version=version,
                        plural=str(entry["resource"]),
                        kind=(entry.get("responseKind") or {}).get("kind") or None,
                        singular=entry.get("singularResource") or None,
                        shortcuts=frozenset(entry.get("shortNames") or ()),
                        categories=frozenset(entry.get("categories") or ()),
                        subresources=frozenset(
                            str(sub.get("subresource"))
                            for sub in entry.get("subresources") or ()
                            if isinstance(sub, Mapping) and sub.get("subresource")
                        ),
                        namespaced=entry.get("scope") == "Namespaced",
                        preferred=index == 0,
                        verbs=frozenset(entry.get("verbs") or ()),
                    )
                )
    return resources


def parse_resource_list(group: str, version: str, preferred: bool, rsp: Mapping[str, Any]) -> list[Resource]:
    """Convert an ``APIResourceList`` into resources (with the subresources folded into them)."""
    entries = [entry for entry in rsp.get("resources") or [] if isinstance(entry, Mapping)]
    subresources: dict[str, set[str]] = {}
    for entry in entries:
        name = entry.get("name", "")
        if "/" in name:
            plural, _, subresource = name.partition("/")
            subresources.setdefault(plural, set()).add(subresource)
    resources: list[Resource] = []
    for entry in entries:
        name = entry.get("name", "")
        if not name or "/" in name:
            continue
        resources.append(
            Resource(
                group=group,
                version=version,
                plural=name,
                kind=entry.get("kind") or None,
                singular=entry.get("singularName") or None,
                shortcuts=frozenset(entry.get("shortNames") or ()),
                categories=frozenset(entry.get("categories") or ()),
                subresources=frozenset(subresources.get(name, ())),
                namespaced=bool(entry.get("namespaced", False)),
                preferred=preferred,
                verbs=frozenset(entry.get("verbs") or ()),
            )
        )
    return resources


def resolve(selectors: Iterable[Selector], resources: Iterable[Resource]) -> dict[Selector, frozenset[Resource]]:
    """Which resources every selector means (an empty set if none or ambiguous)."""
    resources = list(resources)
    return {selector: selector.select(resources) for selector in selectors}


def _groups_of(selectors: Iterable[Selector]) -> set[str] | None:
    """The API groups to discover, if all the selectors are specific about their groups."""
    groups: set[str] = set()
    for selector in selectors:
        if selector.group is None:
            return None
        groups.add(selector.group)
    return groups


class DiscoveryCache:
    """
    The discovered resources, kept until refreshed.

    Concurrent requests for the discovery share one scan. The cache is per cluster
    (per vault), and is refreshed explicitly, e.g. when a CRD is added or removed.
    """

    def __init__(self) -> None:
        self._resources: list[Resource] | None = None
        self._lock = asyncio.Lock()

    @property
    def resources(self) -> list[Resource] | None:
        return list(self._resources) if self._resources is not None else None

    def invalidate(self) -> None:
        self._resources = None

    async def get(
        self,
        *,
        settings: OperatorSettings,
        refresh: bool = False,
        logger: api.Logger | None = None,
        vault: Vault | None = None,
    ) -> list[Resource]:
        async with self._lock:
            if refresh or self._resources is None:
                self._resources = await discover(settings=settings, logger=logger, vault=vault)
            return list(self._resources)


async def scan_resources(
    selectors: Iterable[Selector],
    *,
    settings: OperatorSettings,
    cache: DiscoveryCache | None = None,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> dict[Selector, frozenset[Resource]]:
    """Discover the resources (only the needed groups, if possible) and resolve the selectors."""
    selectors = list(selectors)
    if cache is not None:
        resources = await cache.get(settings=settings, logger=logger, vault=vault)
    else:
        resources = await discover(settings=settings, groups=_groups_of(selectors), logger=logger, vault=vault)
    return resolve(selectors, resources)


async def scan_namespaces(
    patterns: Iterable[NamespacePattern],
    *,
    settings: OperatorSettings,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> set[str]:
    """
    The existing namespaces that match the patterns.

    If the scanning is disabled or the namespaces cannot be listed (HTTP 403), only the exact
    namespace names of the patterns are used as they are, assuming they exist.
    """
    logger = logger if logger is not None else api.default_logger
    patterns = list(patterns)
    if settings.scanning.disabled:
        return set(select_specific_namespaces(patterns))
    try:
        items, _ = await fetching.list_objs(
            resource=NAMESPACES_RESOURCE, namespace=None, settings=settings, logger=logger, vault=vault
        )
    except errors.APIForbiddenError:
        logger.warning(
            "Not enough permissions to list the namespaces; only the exact namespace names are used, with no globs."
        )
        return set(select_specific_namespaces(patterns))
    names = {str(item.get("metadata", {}).get("name")) for item in items if item.get("metadata", {}).get("name")}
    return {name for name in names if match_namespaces(name, patterns)}
