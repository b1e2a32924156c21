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
async def test_a_free_slot_is_not_taken_past_the_waiters() -> None:
    slots = PrioritySemaphore(1)
    assert slots.try_acquire()
    assert not slots.try_acquire()
    waiter = asyncio.create_task(slots.acquire(5))
    await asyncio.sleep(0)
    slots.release()  # handed to the waiter, not freed
    assert not slots.try_acquire()
    await waiter
    slots.release()
    assert slots.try_acquire() and slots.free == 0


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


async def queue_up(slots: PrioritySemaphore, priorities: list[int]) -> list[asyncio.Task[None]]:
    """Waiters for the slots (none of them served yet: the caller holds them all)."""
    waiters = [asyncio.create_task(slots.acquire(priority)) for priority in priorities]
    await asyncio.sleep(0)
    return waiters


@virtualtime.isolated
async def test_a_turn_goes_on_at_once_while_the_queue_is_within_the_slots() -> None:
    slots = PrioritySemaphore(2, max_ongoing=100)
    await slots.acquire(0)
    await slots.acquire(0)
    waiters = await queue_up(slots, [1, 2])  # as many waiting as there are slots: not congested
    await asyncio.wait_for(slots.turn(9, lapse=60), timeout=0.001)
    for waiter in waiters:
        waiter.cancel()


@virtualtime.isolated
async def test_turns_wait_while_more_queue_than_the_slots_then_go_one_per_served_request() -> None:
    slots = PrioritySemaphore(1, max_ongoing=100)
    await slots.acquire(0)
    await queue_up(slots, [1, 2, 3])  # 3 waiting for 1 slot: congested
    gone: list[int] = []

    async def turn(priority: int) -> None:
        await slots.turn(priority, lapse=60)
        gone.append(priority)

    turns = [asyncio.create_task(turn(priority)) for priority in (20, 10, 30)]
    await asyncio.sleep(0)
    assert gone == []
    slots.release()  # the 1st waiter served: 2 queue for 1 slot, still congested
    await asyncio.sleep(0)
    assert gone == []
    slots.release()  # the 2nd: 1 queues for 1 slot, within the slots: one turn goes, by its priority
    await asyncio.sleep(0)
    assert gone == [10]
    slots.release()  # the 3rd: nothing queues any more: all the rest go
    await asyncio.gather(*turns)
    assert gone == [10, 20, 30]


@virtualtime.isolated
async def test_a_new_turn_waits_behind_the_earlier_turns_even_when_the_queue_is_short() -> None:
    slots = PrioritySemaphore(1, max_ongoing=100)
    await slots.acquire(0)
    await queue_up(slots, [1, 2, 3])
    first = asyncio.create_task(slots.turn(5, lapse=60))
    second = asyncio.create_task(slots.turn(6, lapse=60))
    await asyncio.sleep(0)
    slots.release()
    slots.release()  # 1 queues for 1 slot: one turn goes, the other still waits
    await first
    assert slots.waiting == 1 and not second.done()
    late = asyncio.create_task(slots.turn(7, lapse=60))  # the queue is short, but an earlier turn waits: so this one
    await asyncio.sleep(0)
    assert not late.done()
    slots.release()  # nothing queues any more: both go
    await asyncio.gather(second, late)


@virtualtime.isolated
async def test_a_cancelled_turn_is_not_counted_and_blocks_nobody() -> None:
    slots = PrioritySemaphore(1, max_ongoing=100)
    await slots.acquire(0)
    waiters = await queue_up(slots, [1, 2])
    cancelled = asyncio.create_task(slots.turn(5, lapse=60))
    await asyncio.sleep(0)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    slots.release()
    slots.release()
    await asyncio.gather(*waiters)
    await asyncio.wait_for(slots.turn(6, lapse=60), timeout=0.001)  # nothing queues, no turn waits: at once
    assert slots.ongoing == 1  # only the last one: the cancelled one never counted


@virtualtime.isolated
async def test_turns_wait_while_too_many_are_ongoing_and_go_by_priority_as_those_end() -> None:
    slots = PrioritySemaphore(10, max_ongoing=2)
    first = await asyncio.wait_for(slots.turn(1, lapse=60), timeout=0.001)
    second = await asyncio.wait_for(slots.turn(2, lapse=60), timeout=0.001)
    later = asyncio.create_task(slots.turn(5, lapse=60))
    sooner = asyncio.create_task(slots.turn(3, lapse=60))
    await asyncio.sleep(0)
    assert not later.done() and not sooner.done() and slots.ongoing == 2
    first.end()
    first.end()  # ending twice counts once
    await asyncio.sleep(0)
    assert sooner.done() and not later.done() and slots.ongoing == 2
    second.end()
    await asyncio.sleep(0)
    assert later.done() and slots.ongoing == 2
    later.result().end()
    sooner.result().end()
    assert slots.ongoing == 0


@virtualtime.isolated
async def test_an_ongoing_turn_lapses_and_lets_the_next_one_go() -> None:
    loop = asyncio.get_running_loop()
    slots = PrioritySemaphore(10, max_ongoing=1)
    await slots.turn(1, lapse=5)  # never ended: e.g. its work waits for an hour
    started = loop.time()
    await slots.turn(2, lapse=5)
    assert loop.time() - started == pytest.approx(5)
    assert slots.ongoing == 1
