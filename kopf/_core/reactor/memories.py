"""
In-memory knowledge about the individual objects, kept for the operator's lifetime.

Nothing here is persisted: after a restart, all objects are new to the operator.
Every object has its memory (by its uid, or by its namespace & name if there is no uid):

* its own memo (a shallow copy of the operator's memo, made on the first sight);
* whether it was first noticed by the initial listing, i.e. it existed before the operator
  has started: then, the resuming handlers are due for it (once per the operator's lifetime);
* whether it was fully handled at least once since then (no more resuming handlers);
* the resource version expected after the framework's own patch (for the consistency),
  and whether its event can be skipped (it changes nothing);
* free room for the other engines (daemons, timers, indices) in ``extras``.

The memory is forgotten when the object is gone (deleted from the cluster).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from kopf._cogs.structs import ephemera


@dataclasses.dataclass(slots=True)  # one per object: no per-instance __dict__
class ResourceMemory:
    """Everything the operator remembers about one object while it exists."""

    memo: ephemera.AnyMemo = None
    noticed_by_listing: bool = False
    fully_handled_once: bool = False

    #: The resource version of the object as patched by the framework, and until when (loop time) to wait for it.
    expected_version: str | None = None
    expected_deadline: float | None = None

    #: The version of the framework's own last patch if its event will change nothing (see ``settling``).
    settled_version: str | None = None

    #: The number of events seen by this operator (for the diagnostics).
    events_seen: int = 0

    #: Whether the object's handlers are being processed now (they run, or the processing sleeps for those delayed),
    #: and until when (loop time) it sleeps for the delayed ones (retries), if it does. For observers only.
    handling: bool = False
    delayed_until: float | None = None

    #: Room for other engines (daemons, timers, indices, ...): arbitrary per-object data by their names.
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def resumed(self) -> bool:
        """Whether the resuming handlers are still due: the object existed before the operator started."""
        return self.noticed_by_listing and not self.fully_handled_once


def get_memory_key(raw_body: Mapping[str, Any]) -> str:
    """The identity of an object: its uid, or its namespace & name if there is no uid (e.g. in tests)."""
    metadata: Mapping[str, Any] = raw_body.get("metadata") or {}
    uid = metadata.get("uid")
    if uid:
        return str(uid)
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"


class ResourceMemories:
    """The memories of all objects of one operator (across all resources and namespaces)."""

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[str, ResourceMemory] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, raw_body: object) -> bool:
        return isinstance(raw_body, Mapping) and get_memory_key(raw_body) in self._items

    def iter_all_memories(self) -> Iterator[ResourceMemory]:
        return iter(list(self._items.values()))

    def recall(
        self,
        raw_body: Mapping[str, Any],
        *,
        memo: ephemera.AnyMemo = None,
        noticed_by_listing: bool = False,
    ) -> ResourceMemory:
        """
        Get the memory of the object; create it on the first sight.

        The per-object memo is forked from the operator's one only once, on the first sight.
        ``noticed_by_listing`` is used only on the first sight too.
        """
        key = get_memory_key(raw_body)
        memory = self._items.get(key)
        if memory is None:
            memory = ResourceMemory(
                memo=ephemera.fork_memo(memo) if memo is not None else ephemera.Memo(),
                noticed_by_listing=noticed_by_listing,
            )
            self._items[key] = memory
        return memory

    def forget(self, raw_body: Mapping[str, Any]) -> None:
        """Forget the object (e.g. when it is gone); a no-op if it is not remembered."""
        self._items.pop(get_memory_key(raw_body), None)
