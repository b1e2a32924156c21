"""The requests' slots: served by priority (the order of their objects' start), never lost on cancellation."""

from __future__ import annotations

import asyncio

import pytest

from kopf._cogs.aiokits.aiopriority import PrioritySemaphore
from kopf_sim.timing import virtualtime


async def hold(slots: PrioritySemaphore, priority: int, served: list[int], release: asyncio.Event) -> None:
    async with slots.slot(priority):
        served.append(priority)
        await release.wait()


@virtualtime.isolated
async def test_the_waiters_are_served_by_priority_then_by_arrival() -> None:
    slots = PrioritySemaphore(1)
    served: list[int] = []
    release = asyncio.Event()
    first = asyncio.create_task(hold(slots, 5, served, release))
    await asyncio.sleep(0)
    others = [asyncio.create_task(hold(slots, priority, served, release)) for priority in (9, 3, 7, 3, 1)]
    await asyncio.sleep(0)
    assert served == [5] and slots.waiting == 5
    release.set()
    await asyncio.gather(first, *others)
    assert served == [5, 1, 3, 3, 7, 9]
    assert slots.free == 1 and slots.waiting == 0


@virtualtime.isolated
async def test_free_slots_are_taken_at_once_up_to_the_limit() -> None:
    slots = PrioritySemaphore(2)
    await slots.acquire(10)
    await slots.acquire(20)
    assert slots.free == 0
    late = asyncio.create_task(slots.acquire(0))
    await asyncio.sleep(0)
    assert not late.done() and slots.waiting == 1
    slots.release()
    await late
    assert slots.free == 0 and slots.waiting == 0


@virtualtime.isolated
async def test_a_cancelled_waiter_gives_up_its_place_and_no_slot_is_lost() -> None:
    slots = PrioritySemaphore(1)
    await slots.acquire(0)
    cancelled = asyncio.create_task(slots.acquire(1))
    later = asyncio.create_task(slots.acquire(2))
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    assert slots.waiting == 1
    slots.release()
    await later  # the cancelled one was skipped
    slots.release()
    assert slots.free == 1 and slots.waiting == 0


@virtualtime.isolated
async def test_a_waiter_cancelled_after_being_served_passes_the_slot_on() -> None:
    slots = PrioritySemaphore(1)
    await slots.acquire(0)
    served_then_cancelled = asyncio.create_task(slots.acquire(1))
    next_one = asyncio.create_task(slots.acquire(2))
    await asyncio.sleep(0)
    slots.release()  # served (its future resolved), but it has not resumed yet
    served_then_cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await served_then_cancelled
    await next_one
    assert slots.free == 0 and slots.waiting == 0


def test_at_least_one_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        PrioritySemaphore(0)
