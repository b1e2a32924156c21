"""Stored states of objects: their JSON bytes, and their decoded form while it is in use.

A large cluster holds most objects as compact JSON (a few hundred bytes each instead of a few
kilobytes of dicts and strings), and serves lists and watch events by splicing those bytes. The
objects used lately stay decoded too (the :class:`HotObjects` budget); a small cluster, such as a
test's, never exceeds it, so its objects are never decoded twice, and are encoded only when served.

A stored state is immutable: writes store new states; nobody may mutate a stored dict.
"""

from __future__ import annotations

import collections
import json
import sys
from collections.abc import Callable

from kopf_sim.kube.jsoncodec import compact_bytes
from kopf_sim.kube.objects import JsonDict

#: The JSON decoder's C scanner, called directly on our own compact JSON (``json.loads`` of bytes guesses their
#: encoding and checks for trailing text first, in Python: a third of the time of a small object's decoding).
_scan_json: Callable[[str, int], tuple[JsonDict, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
#: How many decoded objects a cluster keeps beyond their bytes (the rest are decoded again when read).
HOT_OBJECTS = 10_000
_OWN_REFERENCES = 3  # of a stored dict while cool() looks at it: the slot, the local name, getrefcount's argument


class HotObjects:
    """The budget of decoded objects: the longest decoded ones are let go first (as bytes they stay)."""

    def __init__(self, capacity: int = HOT_OBJECTS) -> None:
        self.capacity = capacity
        self._queue: collections.deque[Stored] = collections.deque()

    def keep(self, stored: Stored) -> None:
        queue = self._queue
        queue.append(stored)
        if len(queue) > self.capacity:
            oldest = queue.popleft()
            if not oldest.cool():
                queue.append(oldest)  # in use: it stays decoded, and its turn comes again later

    def __len__(self) -> int:
        return len(self._queue)


class Stored:
    """One state of one object, as bytes or as a dict or both; decoded on demand within the hot budget."""

    __slots__ = ("_hot", "_obj", "_raw", "api_version")

    def __init__(self, obj: JsonDict | None, hot: HotObjects, *, raw: bytes | None = None) -> None:
        self._obj = obj
        self._raw = raw
        self._hot = hot
        if obj is not None:
            self.api_version: str = str(obj.get("apiVersion", ""))
            hot.keep(self)
        else:
            self.api_version = str(self.obj.get("apiVersion", ""))

    @property
    def obj(self) -> JsonDict:
        """The decoded object (never mutate it)."""
        obj = self._obj
        if obj is None:
            assert self._raw is not None
            obj = self._obj = _scan_json(self._raw.decode(), 0)[0]
            self._hot.keep(self)
        return obj

    @property
    def raw(self) -> bytes:
        """The object as compact JSON, as served (encoded once)."""
        raw = self._raw
        if raw is None:
            raw = self._raw = compact_bytes(self._obj)
        return raw

    def cool(self) -> bool:
        """Keep only the bytes, unless someone holds the dict now (then it stays, and stays the same object).

        Readers may compare what they read with what is stored by identity (``peek(...) is old``, e.g. across
        the awaits of admission webhooks): a state in use is therefore never decoded into a second dict.
        """
        obj = self._obj
        if obj is None:
            return True
        if sys.getrefcount(obj) > _OWN_REFERENCES:
            return False
        if self._raw is None:
            self._raw = compact_bytes(obj)
        self._obj = None
        return True
