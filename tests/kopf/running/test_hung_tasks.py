"""At exit, the tasks left after the root tasks (e.g. spawned by the handlers) get 5 seconds, then are cancelled."""

import asyncio

import pytest

import kopf

pytestmark = pytest.mark.looptime


async def test_leftover_tasks_get_five_seconds_then_are_cancelled() -> None:
    loop = asyncio.get_running_loop()
    finished: list[float] = []
    cancelled: list[float] = []

    async def cleanup_for(seconds: float) -> None:
        try:
            await asyncio.sleep(seconds)
            finished.append(loop.time())
        except asyncio.CancelledError:
            cancelled.append(loop.time())
            raise

    leftovers: set[asyncio.Task[None]] = set()

    async def root() -> None:
        await asyncio.sleep(10)
        leftovers.add(loop.create_task(cleanup_for(4.5)))  # e.g. spawned by a cleanup handler, left running at the exit
        leftovers.add(loop.create_task(cleanup_for(1000)))

    start = loop.time()
    await kopf.run_tasks([loop.create_task(root())])
    assert finished == [start + 14.5]  # not cut short: the 4.5 s of its own fit into the 5 s
    assert cancelled == [start + 15]
