"""
Patching the objects with JSON merge-patches, aware of the status subresource.

If the resource has the ``status`` subresource, the API ignores the changes of ``status``
sent to the main endpoint (and the changes of everything else sent to ``/status``).
So, the patch is split: the ``status`` part goes to ``/status`` first, then the rest to the object.
An object that is gone by the time of patching (HTTP 404) is not an error: there is
nothing to patch anymore, and ``None`` is returned instead of the patched body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kopf._cogs.clients import api, errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import patches
from kopf._cogs.structs.bodies import RawBody
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource

JSON_PATCH_CONTENT_TYPE = "application/json-patch+json"


def split_patch(resource: Resource, patch: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a patch into the main part and the status part (empty unless there is a status subresource)."""
    if "status" in resource.subresources and "status" in patch:
        main = {key: val for key, val in patch.items() if key != "status"}
        return main, {"status": patch["status"]}
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
    uid: str | None = None,
) -> RawBody | None:
    """
    Apply a merge-patch to an object; return the patched body, or ``None`` if the object is gone.

    The name & namespace can also come from the patch's metadata (if not given explicitly).
    An empty patch makes no changes and returns the current body (as read).

    ``uid``: the object's uid as a precondition (the apiserver refuses the patch with 409 if the object of
    that name has another uid): a patch meant for an object deleted and re-created under the same name
    meanwhile (e.g. the operator still processes the old one's events) does not land on the new one;
    that object is gone as well, and ``None`` is returned.
    """
    meta = patch.get("metadata") or {}
    name = name if name is not None else meta.get("name")
    namespace = namespace if namespace is not None else meta.get("namespace")
    if name is None:
        raise ValueError("The object's name is needed for patching.")

    main_patch, status_patch = split_patch(resource, patch)
    if uid is not None:
        main_patch = _with_uid(main_patch, uid) if main_patch else main_patch
        status_patch = _with_uid(status_patch, uid) if status_patch else status_patch
    body: RawBody | None = None
    try:
        # The status goes first: it carries the handlers' results, the main part marks them as handled
        # (the diff-base, the progress); so a crash between the two requests leaves the object either
        # handled with its results or not handled at all (and the handlers run again), never handled
        # with its results lost.
        if status_patch:
            url = resource.get_url(namespace=namespace, name=name, subresource="status")
            # If the main part follows, its response is the one returned: this one is not even decoded
            # (not kept for the whole second request either: all objects in flight would hold one each).
            decode = _ignored if main_patch else None
            body = await api.patch(
                url, payload=status_patch, settings=settings, logger=logger, vault=vault, decode=decode
            )
        if main_patch or not status_patch:
            url = resource.get_url(namespace=namespace, name=name)
            if main_patch:
                body = await api.patch(url, payload=main_patch, settings=settings, logger=logger, vault=vault)
            else:
                body = await api.get(url, settings=settings, logger=logger, vault=vault)
        fns: Sequence[patches.PatchFn] = getattr(patch, "fns", None) or ()
        if fns:
            body = await _apply_fns(
                resource=resource,
                namespace=namespace,
                name=name,
                fns=fns,
                body=body,
                settings=settings,
                logger=logger,
                vault=vault,
            )
    except errors.APINotFoundError:
        return None
    except errors.APIConflictError as exc:
        if uid is not None and _uid_precondition_failed(exc):
            return None
        raise
    return body


def _ignored(_: bytes) -> None:
    return None


def _with_uid(patch: Mapping[str, Any], uid: str) -> dict[str, Any]:
    metadata = dict(patch.get("metadata") or {})
    metadata["uid"] = uid
    return {**patch, "metadata": metadata}


def _uid_precondition_failed(exc: errors.APIConflictError) -> bool:
    """Whether the apiserver has refused a patch for its uid precondition (in its own words)."""
    return "Precondition failed: UID in precondition" in (exc.message or "")


async def _apply_fns(
    *,
    resource: Resource,
    namespace: str | None,
    name: str,
    fns: Sequence[patches.PatchFn],
    body: RawBody | None,
    settings: OperatorSettings,
    logger: api.Logger | None,
    vault: Vault | None,
    attempts: int = 5,
) -> RawBody | None:
    """
    Apply the patch's functions to the freshest body, as a JSON-patch guarded by its resourceVersion.

    If the object changes in between (the guard fails with 409/422), the functions are applied
    again to the newer body, a few times at most.
    """
    url = resource.get_url(namespace=namespace, name=name)
    for attempt in range(attempts):
        if body is None or attempt > 0:
            body = await api.get(url, settings=settings, logger=logger, vault=vault)
        assert body is not None
        operations = patches.make_fns_patch(body, fns)
        if not operations:
            return body
        main_ops = [op for op in operations if not _is_status_op(resource, op)]
        status_ops = [op for op in operations if _is_status_op(resource, op)]
        version = body.get("metadata", {}).get("resourceVersion")
        guard = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] if version else []
        try:
            for ops, subresource in ((main_ops, None), (status_ops, "status")):
                if ops:
                    body = await api.patch(
                        resource.get_url(namespace=namespace, name=name, subresource=subresource),
                        payload=guard + ops,
                        content_type=JSON_PATCH_CONTENT_TYPE,
                        settings=settings,
                        logger=logger,
                        vault=vault,
                    )
                    version = (body or {}).get("metadata", {}).get("resourceVersion")
                    guard = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] if version else []
            return body
        except errors.APIError as e:
            if e.status not in (409, 422) or attempt == attempts - 1:
                raise
    return body


def _is_status_op(resource: Resource, op: Mapping[str, Any]) -> bool:
    return "status" in resource.subresources and str(op.get("path", "")).startswith("/status")
