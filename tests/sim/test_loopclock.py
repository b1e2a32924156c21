"""The clock interface of the virtual-time loop: the loop reads and moves its clock, and nothing else does."""

from __future__ import annotations

import asyncio

import pytest

from kopf_sim.timing import virtualtime
from kopf_sim.timing.loopclock import TICKS_PER_SECOND, LoopClock, VirtualClock


def test_a_fresh_clock_stands_at_its_start() -> None:
    clock = VirtualClock(start=12.5)
    assert isinstance(clock, LoopClock)
    assert (clock.ticks, clock.time()) == (12_500_000, 12.5)
    assert 0 < clock.resolution < 1e-12


def test_timers_fall_due_on_the_nearest_tick_or_the_next_one_never_now() -> None:
    clock = VirtualClock(start=1.0)
    assert clock.tick_of(1.0 + 0.1) == 1_100_000  # float noise: the nearest tick
    assert clock.tick_of(1.0 + 1e-9) == 1_000_001  # a sub-tick delay: the next tick
    assert clock.tick_of(0.5) == 1_000_001  # a timer in the past: the next tick, not now
    assert clock.ticks_of(0.1) == TICKS_PER_SECOND // 10
    assert clock.ticks_of(0.0) == 1  # a wait reaches at least one tick


def test_the_clock_moves_only_forward() -> None:
    clock = VirtualClock()
    clock.jump(5 * TICKS_PER_SECOND)
    assert clock.time() == 5.0
    with pytest.raises(ValueError, match="only forward"):
        clock.jump(1)
    assert clock.time() == 5.0


def test_the_loop_moves_its_clock() -> None:
    async def main() -> tuple[float, int, float]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, virtualtime.VirtualTimeLoop)
        for _ in range(10_000):
            await asyncio.sleep(0.1)
        return loop.time(), loop.clock.ticks, loop.clock.time()

    assert virtualtime.run(main()) == (1000.0, 1000 * TICKS_PER_SECOND, 1000.0)
