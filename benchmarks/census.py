"""
A census of a running operator's memory, taken on a signal, at full speed until then.

``tracemalloc`` slows an operator several times, which changes what is in flight at the peak (with
10,000 objects it saw 21 MiB where the peak RSS was 190 MiB). This costs nothing until ``SIGUSR1``
arrives; then it writes, to the report file: the RSS; the containers (the objects that the garbage
collector tracks, and the dicts they hold; strings are not counted) by type: how many, how many bytes;
the largest kinds of dicts (by their keys); and where the tasks wait (by the chain of their awaits):
e.g. thousands of objects' workers waiting for a request slot.

Run an operator under it: ``python benchmarks/census.py REPORT -- run --standalone ... operator.py``
(the arguments after ``--`` are ``kopf``'s), then ``kill -USR1 PID`` as often as needed.
``profile_operator.py --census 0.45,0.9`` does it all at given shares of the objects handled.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any, TextIO

TOP = 25


def install(report: str) -> None:
    """Write a census to the ``report`` file (appended) on every ``SIGUSR1``."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        with open(report, "a") as f:
            write_census(f)

    signal.signal(signal.SIGUSR1, on_signal)


def write_census(f: TextIO) -> None:
    started = time.perf_counter()
    objects = gc.get_objects()
    counts: collections.Counter[str] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    shapes: collections.Counter[tuple[str, ...]] = collections.Counter()
    # The dicts of atomic values (e.g. the labels of a body) are not tracked: they are found via their holders.
    untracked = {
        id(ref): ref for obj in objects for ref in gc.get_referents(obj) if type(ref) is dict and not gc.is_tracked(ref)
    }
    for obj in [*objects, *untracked.values()]:
        name = type(obj).__qualname__
        size = sys.getsizeof(obj)
        counts[name] += 1
        sizes[name] += size
        if type(obj) is dict:
            shapes[tuple(sorted(str(key) for key in list(obj)[:6]))] += size
    total = sum(sizes.values()) / 2**20
    f.write(f"=== census: RSS {_rss_mib():.1f} MiB; {total:.1f} MiB in {len(objects) + len(untracked)} containers\n")
    f.write("--- by type (bytes, count):\n")
    for name, size in sizes.most_common(TOP):
        f.write(f"{size:12,d} {counts[name]:9,d}  {name}\n")
    f.write("--- dicts by their first keys (bytes):\n")
    for shape, size in shapes.most_common(TOP):
        f.write(f"{size:12,d}  {', '.join(shape)[:120]}\n")
    f.write("--- tasks by where they wait:\n")
    for chain, count in _waits().most_common(TOP):
        f.write(f"{count:9,d}  {chain}\n")
    f.write(f"--- (taken in {time.perf_counter() - started:.2f} s)\n")
    del objects, untracked


def _waits() -> collections.Counter[str]:
    waits: collections.Counter[str] = collections.Counter()
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no running loop (yet, or any more)
        return waits
    for task in tasks:
        chain: list[str] = []
        awaited: Any = task.get_coro()
        while awaited is not None and hasattr(awaited, "cr_frame"):
            frame = awaited.cr_frame
            chain.append(f"{awaited.__qualname__}:{frame.f_lineno if frame is not None else '-'}")
            awaited = awaited.cr_await
        if awaited is not None:
            chain.append(type(awaited).__name__)
        waits[" > ".join(chain[-4:])] += 1
    return waits


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[1] != "--":
        raise SystemExit("Usage: python benchmarks/census.py REPORT -- KOPF-ARGUMENTS...")
    install(args[0])
    from kopf.cli import main as kopf_main

    kopf_main(args=args[2:], prog_name="kopf")


if __name__ == "__main__":
    main()
