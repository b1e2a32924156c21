"""
Patching the objects with JSON merge-patches, aware of the status subresource.

If the resource has the ``status`` subresource, the API ignores the changes of ``status``
sent to the main endpoint (and the changes of everything else sent to ``/status``).
So, the patch is split: the ``status`` part goes to ``/status`` first, then the rest to the object.
An object that is gone by the time of patching (HTTP 404) is not an error: there is
nothing to patch anymore, and ``None`` is returned instead of the patched body.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf._cogs.clients import api, errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import RawBody
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource


def split_patch(resource: Resource, patch: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a patch into the main part and the status part (empty unless there is a status subresource)."""
    if 'status' in resource.subresources and 'status' in patch:
        main = {key: val for key, val in patch.items() if key != 'status'}
        return main, {'status': patch['status']}
    return dict(patch), {}


async def patch_obj(
        *,
        resource: Resource,
        namespace: str | None,
        name: str | None,
        patch: Mapping[str, Any],
        settings: OperatorSettings,
        logger: api.Logger | None = None,
        vault: Vault | None = None,
) -> RawBody | None:
    """
    Apply a merge-patch to an object; return the patched body, or ``None`` if the object is gone.

    The name & namespace can also come from the patch's metadata (if not given explicitly).
    An empty patch makes no changes and returns the current body (as read).
    """
    meta = patch.get('metadata') or {}
    name = name if name is not None else meta.get('name')
    namespace = namespace if namespace is not None else meta.get('namespace')
    if name is None:
        raise ValueError("The object's name is needed for patching.")

    main_patch, status_patch = split_patch(resource, patch)
    body: RawBody | None = None
    try:
        # The status goes first: it carries the handlers' results, the main part marks them as handled
        # (the diff-base, the progress); so a crash between the two requests leaves the object either
        # handled with its results or not handled at all (and the handlers run again), never handled
        # with its results lost.
        if status_patch:
            url = resource.get_url(namespace=namespace, name=name, subresource='status')
            body = await api.patch(url, payload=status_patch, settings=settings, logger=logger, vault=vault)
        if main_patch or not status_patch:
            url = resource.get_url(namespace=namespace, name=name)
            if main_patch:
                body = await api.patch(url, payload=main_patch, settings=settings, logger=logger, vault=vault)
            else:
                body = await api.get(url, settings=settings, logger=logger, vault=vault)
    except errors.APINotFoundError:
        return None
    return body
