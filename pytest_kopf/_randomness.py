"""Randomness as the operator's code sees it in a check's world: seeded per world, the same in every run.

An operator draws passwords (``secrets.token_urlsafe()``), instance ids (``uuid.uuid4()``), jitter
(``random.random()``). With the process's own randomness, two runs of the same actions differ in
those values (and a trace that carries them is not the same twice); with one seed per world, the same
seed gives the same values, byte for byte, and two seeds give two different runs of a correct operator,
which is how the checks learn which fields are noise (:mod:`pytest_kopf._noise`).

While a world is open (:func:`seeded`), these draw from its seeded generators when called in its loop's
thread or in one of its loop's executor jobs (the sync handlers, daemons and timers), and from the
process's own randomness anywhere else (pytest, hypothesis, other tests):

- the functions of ``random`` (``random.random()``, ``randint()``, ``choice()``, ...; ``random.seed()``
  reseeds the world's generator), and ``random.Random()`` made without a seed;
- ``os.urandom()`` and ``os.getrandom()``, and so ``uuid.uuid4()``, ``secrets`` (``token_bytes()``,
  ``token_hex()``, ``token_urlsafe()``, ``choice()``, ``randbelow()``) and ``random.SystemRandom`` (whose picks
  among n are the world's generator's, so that an antithetic world picks otherwise);
- ``uuid.uuid1()``: the world's virtual time, a random node id of the world, a seeded clock sequence.

The loop's thread has one generator; each executor job has its own, seeded by the world's seed and the
job's serial (the order of the jobs' submission, the same in every run), so the values drawn in sync
handlers do not depend on how their threads interleave. Threads that the operator starts by itself are
not the world's: they get the process's randomness. As with the clocks (:mod:`pytest_kopf._clocks`), a
module that copied a function before the world opened (``from os import urandom`` at an import done
earlier) keeps the real one; the operator's own files and modules are loaded in the world, so they see these.
"""

from __future__ import annotations

import asyncio.events
import contextlib
import os
import random
import sys
import threading
import types
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from kopf_sim.timing.virtualtime import job_loop, job_serial

from ._clocks import is_operator_frame

__all__ = ["ANTITHETIC_SEED", "Antithetic", "WorldRandomness", "current_random", "seeded"]

#: The functions of ``random`` that draw from its hidden shared generator (the world's generator instead).
_RANDOM_FUNCTIONS = tuple(name for name in random.__all__ if name not in ("Random", "SystemRandom"))
#: The 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch, as RFC 4122 counts them.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


class Antithetic(random.Random):
    """A generator whose every draw differs from that of a plain one of the same seed at the same point.

    The same state underneath, each value turned to another: the bits complemented (so bytes, tokens and uuids),
    floats moved by half their range (``random()``, and so ``choices()``, ``uniform()``), and a pick among ``n``
    moved to the next one (``choice()``, ``randint()``, ``sample()``, ``shuffle()``). Two worlds of the same seed,
    one plain and one antithetic, draw differently wherever they draw alike: even a choice between two values
    differs, so whatever an operator draws is learned as noise, however few the values (:mod:`pytest_kopf._noise`).
    """

    def random(self) -> float:
        return (super().random() + 0.5) % 1.0

    def getrandbits(self, k: int, /) -> int:
        return super().getrandbits(k) ^ ((1 << k) - 1)

    def _randbelow(self, n: int) -> int:  # (CPython's own way: a plain generator's pick, then the next)
        k = n.bit_length()
        r = random.Random.getrandbits(self, k)
        while r >= n:
            r = random.Random.getrandbits(self, k)
        return (r + 1) % n


class WorldRandomness:
    """The seeded generators of one world: one for its loop's thread, one per executor job.

    ``antithetic``: its generators draw unlike those of a plain world of the same seed, every time
    (``Antithetic``).
    """

    def __init__(self, seed: int, *, antithetic: bool = False) -> None:
        self.seed = seed
        self._kind: type[random.Random] = Antithetic if antithetic else random.Random
        self.loop_random = self._kind(f"kopf-world:{seed}:loop")
        self._jobs: dict[int, random.Random] = {}
        self._places: dict[str, int] = {}
        self._lock = threading.Lock()
        # A node id with the multicast bit set: random, never a real network card's (RFC 4122, 4.5).
        self.uuid_node = random.Random(f"kopf-world:{seed}:node").getrandbits(48) | (1 << 40)
        self._last_uuid_time: int | None = None

    def for_job(self, serial: int) -> random.Random:
        with self._lock:
            generator = self._jobs.get(serial)
            if generator is None:
                generator = self._jobs[serial] = self._kind(f"kopf-world:{self.seed}:job:{serial}")
            return generator

    def place_seed(self, place: str) -> str:
        """A seed for a generator made at this place (the n-th there in this world): the same in every run."""
        with self._lock:
            count = self._places[place] = self._places.get(place, 0) + 1
        return f"kopf-world:{self.seed}:{place}:{count}"

    def uuid1(self, generator: random.Random, node: int | None, clock_seq: int | None) -> uuid.UUID:
        """A version-1 UUID of this world: its virtual time, its node id, a seeded clock sequence."""
        import time  # the virtual clock while the world's clocks are in force (pytest_kopf._clocks)

        timestamp = time.time_ns() // 100 + _UUID_EPOCH_OFFSET
        with self._lock:
            if self._last_uuid_time is not None and timestamp <= self._last_uuid_time:
                timestamp = self._last_uuid_time + 1
            self._last_uuid_time = timestamp
        clock_seq = generator.getrandbits(14) if clock_seq is None else clock_seq
        node = self.uuid_node if node is None else node
        fields = (
            timestamp & 0xFFFFFFFF,
            (timestamp >> 32) & 0xFFFF,
            (timestamp >> 48) & 0x0FFF,
            (clock_seq >> 8) & 0x3F,
            clock_seq & 0xFF,
            node,
        )
        return uuid.UUID(fields=fields, version=1)


_worlds: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, WorldRandomness] = weakref.WeakKeyDictionary()


def _current_world() -> tuple[WorldRandomness, random.Random] | None:
    loop = asyncio.events._get_running_loop()
    if loop is not None:
        world = _worlds.get(loop)
        return (world, world.loop_random) if world is not None else None
    loop = job_loop()
    world = _worlds.get(loop) if loop is not None else None
    if world is None:
        return None
    serial = job_serial()
    return world, (world.for_job(serial) if serial is not None else world.loop_random)


def current_random() -> random.Random | None:
    """The generator of the world whose code runs here (its loop's thread, or one of its jobs), if any."""
    found = _current_world()
    return found[1] if found is not None else None


# -- the patches ---------------------------------------------------------------------------------------

_real_urandom = os.urandom
_real_getrandom: Callable[..., bytes] | None = getattr(os, "getrandom", None)
_real_seed = random.Random.seed
_real_uuid1 = uuid.uuid1


def _urandom(size: int, /) -> bytes:
    generator = current_random()
    if generator is None:
        return _real_urandom(size)
    if size < 0:
        raise ValueError("negative argument not allowed")
    return generator.randbytes(size)


def _getrandom(size: int, flags: int = 0) -> bytes:
    generator = current_random()
    if generator is None:
        assert _real_getrandom is not None
        return _real_getrandom(size, flags)
    if size < 0:
        raise ValueError("negative argument not allowed")
    return generator.randbytes(size)


_real_system_randbelow: Callable[[random.SystemRandom, int], int] = random.SystemRandom._randbelow  # type: ignore[attr-defined]


def _system_randbelow(self: random.SystemRandom, n: int) -> int:
    """A pick among ``n`` of the system's generator (``secrets.choice()``, ``secrets.randbelow()``): the world's.

    The system's own way rejects draws out of range, so a pick from complemented bytes is not the antithetic one.
    """
    generator = current_random()
    if generator is None:
        return _real_system_randbelow(self, n)
    pick: int = generator._randbelow(n)  # type: ignore[attr-defined]
    return pick


def _random_function(name: str) -> Callable[..., Any]:
    real = getattr(random, name)

    def draw(*args: Any, **kwargs: Any) -> Any:
        generator = current_random()
        return real(*args, **kwargs) if generator is None else getattr(generator, name)(*args, **kwargs)

    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = real.__doc__
    return draw


def _seed(self: random.Random, a: Any = None, version: int = 2) -> None:
    """``random.Random()`` (no seed) made by the operator's code in a world: seeded by the world and the place.

    Only the operator's code (not a library's): libraries make such generators lazily, once per process, to be
    unlike other processes' (``tempfile``'s names: seeded alike, the parallel test processes would try the same
    names). Not from the world's generator either, whose draws it would shift: from the world's seed and the
    place (file, line, and how many were made there in this world), the same in every run.
    """
    if a is None:
        found = _current_world()
        caller = _caller()
        if found is not None and found[1] is not self and is_operator_frame(caller):
            a = found[0].place_seed(f"{caller.f_code.co_filename}:{caller.f_lineno}")
    _real_seed(self, a, version)


def _caller() -> types.FrameType:
    """The frame of the code that asks for a seed (outside of ``random`` itself)."""
    frame = sys._getframe(2)
    while frame.f_back is not None and frame.f_code.co_filename == random.__file__:
        frame = frame.f_back
    return frame


def _uuid1(node: int | None = None, clock_seq: int | None = None) -> uuid.UUID:
    found = _current_world()
    if found is None:
        return _real_uuid1(node, clock_seq)
    world, generator = found
    return world.uuid1(generator, node, clock_seq)


_PATCHES: list[tuple[Any, str, Any]] = [
    (os, "urandom", _urandom),
    (random, "_urandom", _urandom),  # random.SystemRandom's source (and so that of secrets)
    (random.SystemRandom, "_randbelow", _system_randbelow),
    (random.Random, "seed", _seed),
    (uuid, "uuid1", _uuid1),
    *((random, name, _random_function(name)) for name in _RANDOM_FUNCTIONS),
    *([(os, "getrandom", _getrandom)] if _real_getrandom is not None else []),
]
_ORIGINALS = [(target, name, getattr(target, name)) for target, name, _ in _PATCHES]
_installed = 0
_lock = threading.Lock()


#: The seed whose worlds draw the antithetic of seed 0's (the checks' reference: unlike the baseline in every draw).
ANTITHETIC_SEED = 1


@contextlib.contextmanager
def seeded(loop: asyncio.AbstractEventLoop, seed: int) -> Iterator[WorldRandomness]:
    """Meanwhile, the code of this loop (and of its executor jobs) draws from generators seeded with ``seed``
    (``ANTITHETIC_SEED``: those of seed 0, antithetic, so unlike seed 0's in every draw)."""
    global _installed
    world = WorldRandomness(0, antithetic=True) if seed == ANTITHETIC_SEED else WorldRandomness(seed)
    with _lock:
        _worlds[loop] = world
        _installed += 1
        if _installed == 1:
            for target, name, replacement in _PATCHES:
                setattr(target, name, replacement)
    try:
        yield world
    finally:
        with _lock:
            _worlds.pop(loop, None)
            _installed -= 1
            if _installed == 0:
                for target, name, original in _ORIGINALS:
                    setattr(target, name, original)
