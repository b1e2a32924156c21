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
    block = bytearray(os.urandom(16 * count))
    block[6::16] = block[6::16].translate(_VERSION_4)  # each uid's version and variant bits, all at once
    block[8::16] = block[8::16].translate(_RFC_4122)
    digits = block.hex()
    return [
        f"{digits[at : at + 8]}-{digits[at + 8 : at + 12]}-{digits[at + 12 : at + 16]}-{digits[at + 16 : at + 20]}-"
        f"{digits[at + 20 : at + 32]}"
        for at in range(0, len(digits), 32)
    ]


_VERSION_4 = bytes(byte & 0x0F | 0x40 for byte in range(256))
_RFC_4122 = bytes(byte & 0x3F | 0x80 for byte in range(256))


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
