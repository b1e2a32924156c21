"""A fixed pure-Python workload, timed before a benchmark's rounds: how fast the shared machine is right now."""

from __future__ import annotations

import time


def calibrate() -> float:
    """Milliseconds of the workload (about 75 ms on a quiet reference machine; twice that under load)."""
    started = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i % 7
    return (time.perf_counter() - started) * 1000
