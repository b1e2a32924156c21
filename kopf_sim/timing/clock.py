"""Time and identity, given by the caller so that runs are reproducible.

The simulator never reads the wall clock or generates random uids by itself: a test passes
a virtual clock and a seeded uid generator, a served simulator passes the system ones.
"""

from __future__ import annotations

import datetime
import functools
import os
import random
import uuid
from collections.abc import Callable

Clock = Callable[[], datetime.datetime]
UidFactory = Callable[[], str]


#: The real UTC time (used only when serving to real clients): ``datetime.now`` bound to UTC, with no function
#: of ours around it to call (a load asks for the time once per object).
system_clock: Clock = functools.partial(datetime.datetime.now, datetime.UTC)


def random_uids() -> str:
    """A random UUID4 as text (as ``str(uuid.uuid4())``, without the object in between: loads make many).

    They are made a few hundred at a time (one read of the system's randomness for all of them).
    """
    try:
        return _random_uids.pop()
    except IndexError:
        _random_uids.extend(_make_random_uids(_UIDS_AT_ONCE))
        return _random_uids.pop()


_UIDS_AT_ONCE = 256
_random_uids: list[str] = []  # made, not handed out yet (a list's pop is atomic: threads may share it)
os.register_at_fork(after_in_child=_random_uids.clear)  # a forked process makes uids of its own


def _make_random_uids(count: int) -> list[str]:
    block = os.urandom(16 * count).hex()
    return [
        f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{'89ab'[int(digits[16], 16) & 3]}{digits[17:20]}-{digits[20:]}"
        for digits in (block[start : start + 32] for start in range(0, len(block), 32))
    ]


class SeededUids:
    """Uids that look like UUID4 but come from a seeded generator: same seed, same uids."""

    def __init__(self, seed: int = 0) -> None:
        self._random = random.Random(seed)

    def __call__(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))


class ManualClock:
    """A clock that moves only when told to: for deterministic runs outside of an event loop."""

    def __init__(self, start: datetime.datetime | None = None) -> None:
        self.current = start or datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += datetime.timedelta(seconds=seconds)


@functools.lru_cache(maxsize=64)
def format_timestamp(moment: datetime.datetime) -> str:
    """RFC 3339 with second precision and a ``Z``, as the apiserver writes metav1.Time.

    Cached: one write asks for the same moment several times, and virtual time stands still a lot.
    """
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
