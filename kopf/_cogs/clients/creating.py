"""Creating the objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf._cogs.clients import api
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import RawBody
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource


async def create_obj(
    *,
    resource: Resource,
    body: Mapping[str, Any],
    settings: OperatorSettings,
    namespace: str | None = None,
    name: str | None = None,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> RawBody:
    """
    Create an object and return it as stored by the server.

    The namespace & name, if given, are put into the body's metadata (without overriding);
    the ``apiVersion`` & ``kind`` are added from the resource if absent. HTTP 409 (already exists)
    and other errors escalate as :mod:`.errors` exceptions.
    """
    payload: dict[str, Any] = dict(body)
    metadata: dict[str, Any] = dict(payload.get("metadata") or {})
    if name is not None:
        metadata.setdefault("name", name)
    if namespace is not None and resource.namespaced is not False:
        metadata.setdefault("namespace", namespace)
    namespace = metadata.get("namespace") if resource.namespaced is not False else None
    payload["metadata"] = metadata
    payload.setdefault("apiVersion", resource.api_version)
    if resource.kind is not None:
        payload.setdefault("kind", resource.kind)
    url = resource.get_url(namespace=namespace)
    created: RawBody = await api.post(url, payload=payload, settings=settings, logger=logger, vault=vault)
    return created
