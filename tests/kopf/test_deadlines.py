"""The coarse deadlines of the regular requests: asyncio.timeout()'s semantics, one timer per second of deadlines."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from kopf._cogs.aiokits import deadlines
from kopf._cogs.aiokits.deadlines import within
from kopf_sim.timing import virtualtime


def _timers(loop: asyncio.AbstractEventLoop) -> int:
    return sum(1 for handle in getattr(loop, "_scheduled", []) if not handle.cancelled())


@virtualtime.isolated
async def test_a_block_within_its_deadline_is_untouched() -> None:
    with within(10):
        await asyncio.sleep(9)
        result = "done"
    assert result == "done"
    await asyncio.sleep(5)  # the deadline's timer fires for nobody: nothing is cancelled afterwards
    assert asyncio.get_running_loop().time() == 14


@virtualtime.isolated
async def test_a_long_block_is_cut_at_the_deadline_rounded_up_to_a_second() -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(0.25)
    with pytest.raises(TimeoutError) as e, within(10):
        await asyncio.sleep(100)
    assert loop.time() == 11  # 10.25 rounded up, as aiohttp rounds its timeouts of 5 s and more
    assert isinstance(e.value.__cause__, asyncio.CancelledError)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    await asyncio.sleep(1)  # the task goes on normally: its cancellation was taken back


@virtualtime.isolated
async def test_a_short_deadline_is_exact() -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(0.25)
    with pytest.raises(TimeoutError), within(0.5):
        await asyncio.sleep(100)
    assert loop.time() == 0.75


@virtualtime.isolated
async def test_no_deadline_is_no_limit() -> None:
    with within(None):
        await asyncio.sleep(10_000)
    assert asyncio.get_running_loop().time() == 10_000


@virtualtime.isolated
async def test_the_deadlines_of_the_same_second_share_one_timer() -> None:
    loop = asyncio.get_running_loop()
    started: list[int] = []

    async def request(index: int) -> float:
        with within(300):
            started.append(index)
            await asyncio.sleep(1000)
        return loop.time()

    await asyncio.sleep(0.1)
    before = _timers(loop)
    tasks = [asyncio.create_task(request(index)) for index in range(100)]
    await asyncio.sleep(0)  # all of them start in this one cycle
    assert len(started) == len(tasks)
    assert _timers(loop) - before == 100 + 1  # the requests' sleeps, and one deadline for them all
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(result, TimeoutError) for result in results)
    assert loop.time() == 301


@virtualtime.isolated
async def test_those_who_leave_in_time_are_not_cancelled_with_the_others() -> None:
    async def request(duration: float) -> str:
        with within(10):
            await asyncio.sleep(duration)
        await asyncio.sleep(100)  # long after the deadline: no cancellation arrives here
        return "done"

    quick = asyncio.create_task(request(5))
    slow = asyncio.create_task(request(50))
    assert await quick == "done"
    with pytest.raises(TimeoutError):
        await slow


@virtualtime.isolated
async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    async def request() -> None:
        with within(10):
            await asyncio.sleep(100)

    task = asyncio.create_task(request())
    await asyncio.sleep(5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@virtualtime.isolated
async def test_a_cancellation_from_outside_at_the_deadline_stays_a_cancellation() -> None:
    async def request() -> None:
        with within(10):
            await asyncio.sleep(100)

    task = asyncio.create_task(request())
    await asyncio.sleep(0)
    asyncio.get_running_loop().call_at(10, task.cancel)  # after the deadline's own timer, in the same cycle
    with pytest.raises(asyncio.CancelledError):
        await task


@virtualtime.isolated
async def test_other_errors_in_the_block_pass_through() -> None:
    async def request() -> None:
        with within(10):
            await asyncio.sleep(1)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await request()


def test_outside_of_a_task_it_is_refused() -> None:
    with pytest.raises(RuntimeError, match="inside a task"), within(10):
        pass


def test_the_loops_are_not_kept_alive() -> None:
    async def main() -> None:
        with within(10):
            await asyncio.sleep(0)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(main())
    loop.close()
    assert loop in deadlines._DEADLINES
    gone = weakref.ref(loop)
    del loop
    gc.collect()
    assert gone() is None  # (the loops of other tests in this process may still be alive: not counted)
