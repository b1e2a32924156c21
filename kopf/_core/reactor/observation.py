"""
Observing the cluster: which resources are served, and which namespaces exist.

Both are kept in the operator's :class:`Insights`, which the orchestrator follows
to start & stop the watchers as the "dimensions" (resources by namespaces) change.

* The resources: the API discovery resolves the handlers' selectors to the actually
  served resources (only those that can be listed & watched). The custom resource
  definitions are listed first and watched: the discovery runs after the listing and
  again on every change of them (a CRD added, removed, or established), so the
  resources of the CRDs that appear later are served without restarting the operator.

* The namespaces: for the cluster-wide operators, there is nothing to observe (one
  "namespace" ``None`` means the cluster-wide URLs). For the namespaced ones, the
  namespaces are listed & watched, and those that match the patterns are served.
  Without the permissions to list/watch them, the exact names of the patterns are
  served as they are (assuming they exist); globs and negations do not work then.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Collection, Iterable

from kopf._cogs.aiokits.toggles import ToggleSet
from kopf._cogs.clients import errors, scanning, watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import (
    NamespacePattern,
    Resource,
    match_namespaces,
    select_specific_namespaces,
)
from kopf._core.intents import registries

logger = logging.getLogger(__name__)

CRDS_RESOURCE = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", kind="CustomResourceDefinition", namespaced=False
)


@dataclasses.dataclass
class Insights:
    """What the operator knows about the cluster: the resources to serve and the namespaces to serve them in."""

    resources: set[Resource] = dataclasses.field(default_factory=set)
    namespaces: set[str | None] = dataclasses.field(default_factory=set)
    ready_resources: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    ready_namespaces: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    revision: int = 0
    revised: asyncio.Condition = dataclasses.field(default_factory=asyncio.Condition)
    #: On while the operator is paused (e.g. by a peering); its resources are not watched meanwhile.
    paused: ToggleSet = dataclasses.field(default_factory=lambda: ToggleSet(any))

    async def revise(
        self,
        *,
        resources: Iterable[Resource] | None = None,
        namespaces: Iterable[str | None] | None = None,
    ) -> None:
        """Replace the resources and/or namespaces; wake up the followers if anything has changed."""
        changed = False
        if resources is not None:
            new_resources = set(resources)
            if new_resources != self.resources:
                self.resources = new_resources
                changed = True
            self.ready_resources.set()
        if namespaces is not None:
            new_namespaces = set(namespaces)
            if new_namespaces != self.namespaces:
                self.namespaces = new_namespaces
                changed = True
            self.ready_namespaces.set()
        if changed:
            self.revision += 1
            async with self.revised:
                self.revised.notify_all()

    async def wait_for_revision(self, seen: int) -> int:
        """Wait until the insights are revised after the ``seen`` revision; return the new revision."""
        async with self.revised:
            await self.revised.wait_for(lambda: self.revision != seen)
        return self.revision


def is_watchable(resource: Resource) -> bool:
    return {"list", "watch"} <= set(resource.verbs) if resource.verbs else True


async def scan_resources(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    cache: scanning.DiscoveryCache,
    vault: Vault | None = None,
) -> set[Resource]:
    """Discover the served resources of the handlers' selectors (only the watchable ones)."""
    discovered = await cache.get(settings=settings, refresh=True, vault=vault)
    for selector, ambiguous in registry.get_ambiguities(discovered).items():
        names = ", ".join(sorted(str(resource) for resource in ambiguous))
        logger.warning(f"Ambiguous resources will not be served (try specifying the API group): {selector} => {names}")
    served = registry.get_resources(discovered)
    return {resource for resource in served if is_watchable(resource)}


async def resource_observer(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    insights: Insights,
    vault: Vault | None = None,
) -> None:
    """Discover the resources initially, and again on every change of the CRDs (forever)."""
    cache = scanning.DiscoveryCache()
    if not registry.get_selectors():
        await insights.revise(resources=())
        await asyncio.Event().wait()

    async def rescan() -> None:
        resources = await scan_resources(registry=registry, settings=settings, cache=cache, vault=vault)
        _log_resources(insights.resources, resources)
        await insights.revise(resources=resources)

    # The CRDs are listed first, and the resources are scanned once they are listed: a CRD that
    # appears meanwhile is either in the scan or comes later as a watch event (and a new scan).
    listed = False
    try:
        stream = watching.infinite_watch(
            resource=CRDS_RESOURCE, namespace=None, settings=settings, markers=True, vault=vault
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                if event is watching.Bookmark.LISTED:
                    listed = True
                elif not listed:
                    continue  # the initial listing: covered by the scan after it.
                await rescan()
    except (errors.APIForbiddenError, errors.APINotFoundError) as e:
        logger.warning(
            f"Cannot watch the custom resource definitions; the resources are not re-scanned when they change: {e}"
        )
        if not listed:
            await rescan()
    await asyncio.Event().wait()


def _log_resources(old: Collection[Resource], new: Collection[Resource]) -> None:
    # Debug only: the published framework logs nothing at INFO here, and the operators' tests may count lines.
    for resource in sorted(set(new) - set(old), key=str):
        logger.debug(f"Serving the resource {resource}.")
    for resource in sorted(set(old) - set(new), key=str):
        logger.debug(f"Not serving the resource {resource} anymore.")


async def namespace_observer(
    *,
    clusterwide: bool,
    namespaces: Collection[NamespacePattern],
    settings: OperatorSettings,
    insights: Insights,
    vault: Vault | None = None,
) -> None:
    """Keep the served namespaces up to date with the existing namespaces (forever)."""
    if clusterwide:
        await insights.revise(namespaces=[None])
        await asyncio.Event().wait()

    patterns = list(namespaces)
    if settings.scanning.disabled:
        await insights.revise(namespaces=select_specific_namespaces(patterns))
        await asyncio.Event().wait()

    existing: set[str] = set()
    listed = False
    try:
        stream = watching.infinite_watch(
            resource=scanning.NAMESPACES_RESOURCE, namespace=None, settings=settings, markers=True, vault=vault
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                if event is watching.Bookmark.LISTED:
                    listed = True
                else:
                    name = (event["object"].get("metadata") or {}).get("name")
                    if not name:
                        continue
                    if event["type"] == "DELETED":
                        existing.discard(name)
                    else:
                        existing.add(name)
                if listed:
                    served = {name for name in existing if match_namespaces(name, patterns)}
                    _log_namespaces(insights.namespaces, served)
                    await insights.revise(namespaces=served)
    except errors.APIForbiddenError:
        logger.warning(
            "Not enough permissions to watch the namespaces: serving only the exact namespace "
            "names as they are, with no globs or negations."
        )
        await insights.revise(namespaces=select_specific_namespaces(patterns))
    await asyncio.Event().wait()


def _log_namespaces(old: Collection[str | None], new: Collection[str | None]) -> None:
    for name in sorted(str(ns) for ns in set(new) - set(old)):
        logger.debug(f"Serving the namespace {name!r}.")
    for name in sorted(str(ns) for ns in set(old) - set(new)):
        logger.debug(f"Not serving the namespace {name!r} anymore.")
