"""The ``scale`` subresource: an object's replicas seen and written as an ``autoscaling/v1 Scale``.

A write to ``/scale`` (``kubectl scale``, an autoscaler) sends a Scale, or a patch of one; the apiserver
computes the object's Scale, applies the request to it, validates it, and sets the object's replicas from
it. Admission sees the Scales (old and new), not the objects, as in the apiserver.
"""

from __future__ import annotations

from typing import Any

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, assign_path, clone, meta, resolve_path
from kopf_sim.kube.resources import ResourceType
from kopf_sim.kube.selectors import LabelSelector
from kopf_sim.writes import patching, typecheck, validation

__all__ = ["SCALE_KIND", "check_scale", "patched_scale", "scale_of", "with_scale"]

#: The kind of every scale subresource's objects, whatever the resource (built-in or custom).
SCALE_KIND = ("autoscaling", "v1", "Scale")
_JSON_PATCH = "application/json-patch+json"


def scale_of(rtype: ResourceType, obj: JsonDict) -> JsonDict:
    """The ``autoscaling/v1 Scale`` view of an object with a scale subresource."""
    assert rtype.scale is not None
    metadata = meta(obj)
    scale: JsonDict = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: metadata[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in metadata
        },
        "spec": {"replicas": resolve_path(obj, rtype.scale.spec_replicas) or 0},
        "status": {"replicas": resolve_path(obj, rtype.scale.status_replicas) or 0},
    }
    if rtype.scale.label_selector:
        selector = resolve_path(obj, rtype.scale.label_selector)
        if isinstance(selector, dict):
            scale["status"]["selector"] = str(LabelSelector.from_spec(selector))
        elif isinstance(selector, str):
            scale["status"]["selector"] = selector
    return scale


def with_scale(rtype: ResourceType, obj: JsonDict, scale: Any) -> JsonDict:
    """The object with its replicas set from a ``Scale`` body (the rest of the Scale is ignored)."""
    assert rtype.scale is not None
    replicas = (scale.get("spec") or {}).get("replicas") or 0 if isinstance(scale, dict) else None
    if not isinstance(replicas, int):
        raise errors.bad_request("the body must be an autoscaling/v1 Scale with an integer spec.replicas")
    new: JsonDict = clone(obj)
    assign_path(new, rtype.scale.spec_replicas, replicas)
    rv = meta(scale).get("resourceVersion")
    if rv:
        new["metadata"]["resourceVersion"] = rv
    return new


def check_scale(scale: Any, name: str) -> None:
    """A ``Scale`` must decode, and ask for a non-negative number of replicas (422 ``Scale.autoscaling``)."""
    typecheck.check_scale(scale)
    causes = validation.replicas_causes((scale.get("spec") or {}).get("replicas"), "spec.replicas")
    if causes:
        raise errors.invalid("Scale", "autoscaling", name, causes)


def patched_scale(scale: JsonDict, patch: Any, content_type: str) -> Any:
    """A Scale patched as the apiserver patches one: a JSON patch, or a merge (strategic or not: a Scale has no lists).

    What the patch makes of it is checked by :func:`check_scale`.
    """
    try:
        if content_type == _JSON_PATCH:
            return patching.apply_json_patch(scale, patch)
        return patching.apply_merge_patch(scale, patch)
    except patching.PatchError as exc:
        raise errors.ApiError(exc.code, "BadRequest" if exc.code == 400 else "Invalid", exc.message) from None
