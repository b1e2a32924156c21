"""
The operator's finalizer on an object: whether it is there, and the patches that add or remove it.

The finalizer blocks the object's actual deletion until the operator releases it (after its
deletion handlers, daemons and timers are done). Kubernetes keeps ``metadata.finalizers``
as a list, which a merge-patch can only replace as a whole: the edits rewrite the list
as the object has it now, with the operator's own name added or removed, and leave
the names of other controllers in place.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from kopf._cogs.structs import bodies, patches


def _names(body: bodies.Body | Mapping[str, Any]) -> Sequence[str]:
    metadata = body.get("metadata") or {}
    names: Sequence[str] = metadata.get("finalizers") or ()
    return names


def is_deletion_ongoing(body: bodies.Body) -> bool:
    """Whether the object is marked for deletion (and waits for its finalizers to be removed)."""
    return body.metadata.deletion_timestamp is not None


def is_deletion_blocked(body: bodies.Body, *, finalizer: str) -> bool:
    """Whether the operator's finalizer is on the object (so its deletion waits for the operator)."""
    return finalizer in _names(body)


def block_deletion(*, body: bodies.Body, patch: patches.Patch, finalizer: str) -> None:
    """Add the operator's finalizer to the patch (unless the object has it already)."""
    names = _names(body)
    if finalizer not in names:
        patch.metadata["finalizers"] = [*names, finalizer]


def allow_deletion(*, body: bodies.Body, patch: patches.Patch, finalizer: str) -> None:
    """Remove the operator's finalizer in the patch (if the object has it), keeping those of others."""
    names = _names(body)
    if finalizer in names:
        patch.metadata["finalizers"] = [name for name in names if name != finalizer]
