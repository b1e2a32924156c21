"""Two end states side by side: the fields in which they differ, those that do not count (noise) greyed.

The states are taken with only the always-volatile fields masked (uids, resource versions, timestamps:
see :func:`~pytest_kopf.driving.end_state`); a difference is noise when it goes away once the check's own
masking is applied (``mask=`` of the user, how the state was reached, the noise learned from two fault-free
runs): the check did not count it. What is left is what the check reported.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kopf_sim.timelines.differences import changed_fields, dotted, shown
from kopf_sim.timelines.model import DifferenceRow

from .._noise import NoiseField, mask_state
from ..driving import mask_object

__all__ = ["Masking", "comparison_masking", "state_differences"]

#: What a comparison makes of an object before comparing it (None: the whole object is noise, left out).
Masking = Callable[[dict[str, Any]], dict[str, Any] | None]


def comparison_masking(
    mask: Sequence[str] = (), noise: Iterable[NoiseField] = (), history: Masking | None = None
) -> Masking:
    """The masking of the comparing checks: the user's ``mask=``, how the state was reached (``history``: see
    :mod:`pytest_kopf._history`), then the noise learned (Secrets decoded)."""
    fields = list(noise)

    def masking(obj: dict[str, Any]) -> dict[str, Any] | None:
        aside: dict[str, Any] | None = mask_object(obj, mask)
        if history is not None and aside is not None:
            aside = history(aside)
        if aside is None:  # derived by the cluster's controllers: compared through its owner
            return None
        masked = mask_state([aside], fields)
        return masked[0] if masked else None

    return masking


def state_differences(
    expected: Sequence[dict[str, Any]], actual: Sequence[dict[str, Any]], masking: Masking
) -> list[DifferenceRow]:
    """The rows of the fields that differ between two end states (objects paired by kind, namespace & name)."""
    rows: list[DifferenceRow] = []
    left, right = _keyed(expected), _keyed(actual)
    for key in sorted(left.keys() | right.keys()):
        old, new = left.get(key), right.get(key)
        where = _title(key)
        if old is None or new is None:  # noise if the comparison leaves it out (derived, or learned as noise)
            only = old if old is not None else new
            left_out = only is not None and masking(only) is None
            rows.append(DifferenceRow(where, "(the object)", _presence(old), _presence(new), noise=left_out))
            continue
        left_masked, right_masked = masking(old), masking(new)
        if left_masked is None or right_masked is None:  # the object is noise (there in one fault-free run only)
            counted: set[tuple[Any, ...]] = set()
        else:
            counted = {path for path, _, _ in changed_fields(left_masked, right_masked)}
        for path, a, b in changed_fields(old, new):
            rows.append(DifferenceRow(where, dotted(path), shown(a), shown(b), noise=path not in counted))
    return rows


def _presence(obj: dict[str, Any] | None) -> str:
    return "(absent)" if obj is None else "present"


def _keyed(objects: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str, str, int], dict[str, Any]]:
    """The objects by kind, namespace and name (and their order, for names alike after masking: ``obj-0-*``)."""
    seen: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    keyed = {}
    for obj in objects:
        metadata = obj.get("metadata") or {}
        identity = (
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(metadata.get("namespace") or ""),
            str(metadata.get("name") or ""),
        )
        keyed[(*identity, seen[identity])] = obj
        seen[identity] += 1
    return keyed


def _title(key: tuple[str, str, str, str, int]) -> str:
    _, kind, namespace, name, index = key
    return f"{kind} {namespace + '/' if namespace else ''}{name}{f' (#{index + 1})' if index else ''}"
