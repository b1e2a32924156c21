"""Deleting the objects."""

from __future__ import annotations

from typing import Any, Literal

from kopf._cogs.clients import api, errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import RawBody
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource

PropagationPolicy = Literal["Background", "Foreground", "Orphan"]


async def delete_obj(
    *,
    resource: Resource,
    namespace: str | None,
    name: str,
    settings: OperatorSettings,
    propagation_policy: PropagationPolicy | None = None,
    grace_period_seconds: int | None = None,
    logger: api.Logger | None = None,
    vault: Vault | None = None,
) -> RawBody | None:
    """
    Delete an object; an already absent object (HTTP 404) is not an error.

    Returns the server's response: the object if it is still there (marked for deletion,
    e.g. blocked by finalizers), or ``None`` if it is gone (incl. a ``Status`` of success).
    """
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    url = resource.get_url(namespace=namespace, name=name)
    try:
        rsp = await api.delete(url, payload=options, settings=settings, logger=logger, vault=vault)
    except errors.APINotFoundError:
        return None
    if not isinstance(rsp, dict) or rsp.get("kind") == "Status":
        return None
    body: RawBody = rsp  # type: ignore[assignment]
    return body
