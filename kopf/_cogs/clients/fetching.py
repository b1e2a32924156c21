"""
Reading the objects: single objects by name, and lists in chunks.

The lists are fetched in chunks (``limit`` & ``continue``), so that the API server
is not asked for thousands of objects in one response. All chunks of one listing
belong to the same consistent snapshot, whose ``resourceVersion`` is returned along
with the items, so that watching can continue exactly from there. If the continue
token expires midway (HTTP 410), the listing starts over.

The items of the lists have no ``apiVersion`` & ``kind`` in the API responses;
they are added here, so that the items look the same as the objects from watching.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Collection, Mapping
from typing import Any, cast

from kopf._cogs.clients import api, auth, errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import RawBody
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource

#: The default number of objects per chunk (the same as kubectl uses).
DEFAULT_CHUNK_SIZE = 500

LabelValue = str | bool | Collection[str] | None
LabelSelector = str | Mapping[str, LabelValue]


def build_label_selector(selector: LabelSelector | None) -> str | None:
    """
    Render a label selector for the API: strings stay as is; mappings are converted.

    In mappings, a string value means equality (``k=v``), ``True`` means the label's presence
    (``k``), ``False`` or ``None`` its absence (``!k``), a collection means one of the values
    (``k in (a,b)``). Filters that cannot be expressed so (e.g. callbacks) stay client-side.
    """
    if selector is None or isinstance(selector, str):
        return selector or None
    parts: list[str] = []
    for key, value in selector.items():
        if isinstance(value, str):
            parts.append(f"{key}={value}")
        elif value is True:
            parts.append(key)
        elif value is False or value is None:
            parts.append(f"!{key}")
        else:
            parts.append(f"{key} in ({','.join(sorted(value))})")
    return ",".join(parts) or None


#: How many times to restart a listing if its continue token expires midway.
MAX_LISTING_RESTARTS = 5


async def read_obj(
    *,
    resource: Resource,
    namespace: str | None,
    name: str,
    settings: OperatorSettings,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> RawBody | None:
    """Read one object; ``None`` if it does not exist."""
    url = resource.get_url(namespace=namespace, name=name)
    try:
        body: RawBody = await api.get(url, settings=settings, logger=logger, vault=vault)
    except errors.APINotFoundError:
        return None
    return body


async def list_objs(
    *,
    resource: Resource,
    namespace: str | None,
    settings: OperatorSettings,
    label_selector: LabelSelector | None = None,
    field_selector: str | None = None,
    chunk_size: int | None = DEFAULT_CHUNK_SIZE,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> tuple[list[RawBody], str]:
    """
    List all objects of a resource (in a namespace or cluster-wide), chunk by chunk.

    Returns the items and the list's ``resourceVersion`` (to start watching from).
    """
    items: list[RawBody] = []
    pages = list_pages(
        resource=resource,
        namespace=namespace,
        settings=settings,
        label_selector=label_selector,
        field_selector=field_selector,
        chunk_size=chunk_size,
        logger=logger,
        vault=vault,
    )
    async with contextlib.aclosing(pages):
        async for page in pages:
            if page.first:
                items = []
            items.extend(page.items)
            if page.resource_version is not None:
                return items, page.resource_version
    raise RuntimeError("A listing has ended without its last chunk.")  # list_pages never ends so


@dataclasses.dataclass(frozen=True)
class ListingPage:
    """One chunk of a listing: ``first`` if the listing (re)starts with it; the version comes with the last one."""

    items: list[RawBody]
    first: bool
    resource_version: str | None  # only in the last chunk: the listing's version ("" if none)


async def list_pages(
    *,
    resource: Resource,
    namespace: str | None,
    settings: OperatorSettings,
    label_selector: LabelSelector | None = None,
    field_selector: str | None = None,
    chunk_size: int | None = DEFAULT_CHUNK_SIZE,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> AsyncGenerator[ListingPage, None]:
    """
    List all objects of a resource chunk by chunk, each chunk as it comes (e.g. to begin the work on it).

    If the continue token expires midway (410), the listing starts over: its next chunk is ``first`` again,
    and the objects of the chunks before may come again, changed or not, or not at all (if gone meanwhile).
    """
    url = resource.get_url(namespace=namespace)
    labels = build_label_selector(label_selector)
    restarts = 0
    while True:
        token: str | None = None
        first = True
        try:
            while True:
                params: dict[str, str] = {}
                if labels:
                    params["labelSelector"] = labels
                if field_selector:
                    params["fieldSelector"] = field_selector
                if chunk_size:
                    params["limit"] = str(chunk_size)
                if token:
                    params["continue"] = token
                order = auth.request_order.set(auth.LISTING_ORDER)  # ahead of the work on the chunks before
                try:
                    rsp: Mapping[str, Any] = await api.get(
                        url, params=params, settings=settings, logger=logger, vault=vault
                    )
                finally:
                    auth.request_order.reset(order)
                kind = _item_kind(resource, rsp)
                items = [_complete(item, resource, kind) for item in rsp.get("items") or []]
                metadata = rsp.get("metadata") or {}
                token = metadata.get("continue") or None
                last = token is None
                yield ListingPage(items, first, str(metadata.get("resourceVersion") or "") if last else None)
                first = False
                if last:
                    return
        except errors.APIGoneError:
            # The continue token has expired (the snapshot is compacted): start over, if it was a token.
            if token is None or restarts >= MAX_LISTING_RESTARTS:
                raise
            restarts += 1
            if logger is not None:
                logger.debug(f"The listing of {resource} has expired midway; starting over.")


def _item_kind(resource: Resource, rsp: Mapping[str, Any]) -> str | None:
    if resource.kind is not None:
        return resource.kind
    list_kind = rsp.get("kind")
    if isinstance(list_kind, str) and list_kind.endswith("List"):
        return list_kind[:-4]
    return None


def _complete(item: Any, resource: Resource, kind: str | None) -> RawBody:
    if not isinstance(item, dict) or ("apiVersion" in item and "kind" in item):
        return cast(RawBody, item)
    head: dict[str, Any] = {"apiVersion": item.get("apiVersion", resource.api_version)}
    if kind is not None or "kind" in item:
        head["kind"] = item.get("kind", kind)
    body: RawBody = {**head, **item}  # type: ignore[typeddict-item]
    return body
