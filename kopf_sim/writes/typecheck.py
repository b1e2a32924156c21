"""Typed decoding of request bodies: a value of the wrong type is a 400, worded as the apiserver words it.

Objects sent whole (create, update) fail as ``ConfigMap in version "v1" cannot be handled as a ConfigMap:
json: cannot unmarshal ...``; the results of patches fail with Go's bare message, as the apiserver
decodes them in another place. See :mod:`kopf_sim.writes.builtin_gotypes` for the types.
"""

from __future__ import annotations

from typing import Any

from kopf_sim.kube import errors
from kopf_sim.kube.resources import ResourceType
from kopf_sim.writes import builtin_gotypes, gotypes


def check_object(rtype: ResourceType, body: Any, *, patched: bool = False) -> None:
    """Refuse an object (a private copy of a dict) whose fields do not decode into the kind's Go type.

    The nulls among the items of typed lists and maps become zero values, as Go decodes them.
    """
    if type(body.get("apiVersion")) is not str or type(body.get("kind")) is not str:  # (else: the usual object)
        _check_type_meta(rtype, body)
    message = gotypes.first_error(
        body, builtin_gotypes.struct_of(rtype.group, rtype.kind, custom=rtype.custom), fill_nulls=True
    )
    if message is not None:
        if patched:
            raise errors.bad_request(message)
        raise errors.bad_request(
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: {message}'
        )


def _check_type_meta(rtype: ResourceType, body: Any) -> None:
    for field in ("apiVersion", "kind"):
        value = body.get(field)
        if value is not None and not isinstance(value, str):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rtype.kind}): couldn't get version/kind; "
                f"json parse error: json: cannot unmarshal {gotypes.json_kind(value)} into Go struct field "
                f".{field} of type string"
            )


def check_scale(body: Any) -> None:
    """A ``Scale`` body (``/scale`` subresource) must decode as ``autoscaling/v1 Scale``."""
    if not isinstance(body, dict):
        raise errors.bad_request(f"json: cannot unmarshal {gotypes.json_kind(body)} into Go value of type v1.Scale")
    message = gotypes.first_error(body, builtin_gotypes.SCALE)
    if message is not None:
        raise errors.bad_request(f'Scale in version "v1" cannot be handled as a Scale: {message}')


def check_delete_options(body: Any) -> None:
    """``DeleteOptions`` must decode (e.g. ``preconditions`` must be an object)."""
    message = gotypes.first_error(body, builtin_gotypes.DELETE_OPTIONS)
    if message is not None:
        raise errors.bad_request(message)
