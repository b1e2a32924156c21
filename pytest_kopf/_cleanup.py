"""The end of a ``--kopf-real`` test: its objects, namespace and CRDs are gone before the next test begins.

An operator's finalizers hold its objects after it has stopped; a namespace with such objects stays
``Terminating``, and a CRD whose objects remain keeps its resource unusable (``create not allowed while
custom resource definition is terminating``) for the next test. So the teardown goes in this order:

1. While the operator still runs (:func:`release_objects`, from the ``kopf_operator`` fixture): the objects
   of the CRDs that the test applied are deleted, so that the operator's deletion handlers run and release
   them, as in a real life of the objects; a short wait for them to be gone.
2. After the operator has stopped (:func:`remove_leftovers`, from the ``kopf_cluster`` fixture): the
   finalizers of what remains of those objects are removed, the objects, the namespace and the CRDs are
   deleted, and the teardown waits until they are gone. A namespace that stays ``Terminating`` has the
   finalizers of its remaining objects (of any resource) removed. What is still there after the timeout
   fails the teardown by name (not the next test).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._discovery import ResourceInfo
from .errors import KopfApiError, KopfTimeoutError

if TYPE_CHECKING:
    from ._realcluster import RealKopfCluster

__all__ = ["release_objects", "remove_leftovers"]

#: Real seconds for the operator to release the objects it serves while it still runs.
RELEASE_TIMEOUT = 10.0
#: Real seconds for the test's namespace, CRDs & objects to be gone after the operator has stopped.
REMOVAL_TIMEOUT = 60.0
#: Real seconds of a namespace's ``Terminating`` before the finalizers of its objects are removed.
NAMESPACE_GRACE = 2.0
_POLL = 0.1
_STRIP = {"metadata": {"finalizers": None}}
_MERGE_PATCH = "application/merge-patch+json"


async def custom_resources(cluster: RealKopfCluster, crd_names: Iterable[str]) -> list[ResourceInfo]:
    """The resources of the CRDs (by name) that still exist."""
    infos: list[ResourceInfo] = []
    for name in crd_names:
        crd = await _get(cluster, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        if crd is None:
            continue
        spec = crd.get("spec") or {}
        versions = [v for v in spec.get("versions") or () if v.get("served", True)]
        storage = next((v for v in versions if v.get("storage")), versions[0] if versions else None)
        if storage is None:
            continue
        infos.append(
            ResourceInfo(
                group=str(spec.get("group") or ""),
                version=str(storage.get("name")),
                plural=str((spec.get("names") or {}).get("plural")),
                kind=str((spec.get("names") or {}).get("kind")),
                namespaced=spec.get("scope") == "Namespaced",
            )
        )
    return infos


async def release_objects(cluster: RealKopfCluster, *, timeout: float = RELEASE_TIMEOUT) -> None:
    """Delete the objects of the test's CRDs, and give the (running) operator some time to release them."""
    infos = await custom_resources(cluster, cluster.created_crds())
    for info in infos:
        for obj in await _items(cluster, info):
            await _delete(cluster, info, obj)
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if not any([await _items(cluster, info) for info in infos]):
            return
        await asyncio.sleep(_POLL)


async def remove_leftovers(cluster: RealKopfCluster, *, timeout: float = REMOVAL_TIMEOUT) -> None:
    """Remove the test's objects (finalizers first), namespace and cluster-wide objects; wait until they are gone."""
    infos = await custom_resources(cluster, cluster.created_crds())
    for info in infos:
        for obj in await _items(cluster, info):
            await _strip(cluster, info, obj)
            await _delete(cluster, info, obj)
    victims = cluster.victims()
    for path in victims:
        await _delete_path(cluster, path)
    started = time.perf_counter()
    stripped_namespace = False
    while True:
        remaining = [path for path in victims if await _get(cluster, path) is not None]
        remaining_objects = [
            f"{info.qualified} {obj['metadata']['name']!r}" for info in infos for obj in await _items(cluster, info)
        ]
        if not remaining and not remaining_objects:
            return
        elapsed = time.perf_counter() - started
        if elapsed > NAMESPACE_GRACE and not stripped_namespace and cluster.namespace_path() in remaining:
            await _strip_namespace(cluster)
            stripped_namespace = True
        if elapsed > timeout:
            names = ", ".join([*remaining, *remaining_objects])
            raise KopfTimeoutError(
                f"The test's objects are not gone {timeout} s after the teardown began: {names}.", seen=True
            )
        await asyncio.sleep(_POLL)


async def _strip_namespace(cluster: RealKopfCluster) -> None:
    """Remove the finalizers of the objects of every listable namespaced resource in the test's namespace."""
    for info in await cluster.namespaced_resources():
        try:
            objects = await _items(cluster, info, cluster.namespace)
        except KopfApiError:
            continue  # e.g. not listable (403/405): nothing to do there
        for obj in objects:
            if obj.get("metadata", {}).get("finalizers"):
                await _strip(cluster, info, obj)


async def _items(cluster: RealKopfCluster, info: ResourceInfo, namespace: str | None = None) -> list[dict[str, Any]]:
    listing = await _get(cluster, info.path(namespace))
    return list((listing or {}).get("items") or ())


async def _get(cluster: RealKopfCluster, path: str) -> Any:
    try:
        return await cluster.api_request("GET", path)
    except KopfApiError as exc:
        if exc.code == 404:
            return None
        raise


async def _strip(cluster: RealKopfCluster, info: ResourceInfo, obj: dict[str, Any]) -> None:
    if not (obj.get("metadata") or {}).get("finalizers"):
        return
    metadata = obj["metadata"]
    try:
        await cluster.api_request(
            "PATCH", info.path(metadata.get("namespace"), metadata["name"]), body=_STRIP, content_type=_MERGE_PATCH
        )
    except KopfApiError as exc:
        if exc.code != 404:
            raise


async def _delete(cluster: RealKopfCluster, info: ResourceInfo, obj: dict[str, Any]) -> None:
    metadata = obj["metadata"]
    if metadata.get("deletionTimestamp"):
        return
    await _delete_path(cluster, info.path(metadata.get("namespace"), metadata["name"]))


async def _delete_path(cluster: RealKopfCluster, path: str) -> None:
    try:
        await cluster.api_request("DELETE", path)
    except KopfApiError as exc:
        if exc.code not in (404, 409):
            raise
