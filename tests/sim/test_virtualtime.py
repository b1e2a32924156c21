"""The virtual-time loop: fast & exact clock, jumps only at quiescence, threads hold time, deadlocks reported.

Async tests here run in a virtual-time loop through :class:`VirtualTimePolicy` (the module's
``event_loop_policy`` fixture, as pytest-asyncio>=1.0 takes it); sync tests use ``virtualtime.run``.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import hypothesis
import pytest
from hypothesis import strategies as st

from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing import virtualtime
from kopf_sim.timing.clock import SeededUids, parse_timestamp
from kopf_sim.timing.virtualtime import DeadlockError, RealIOError, TimeLimitError, VirtualTimeLoop
from kopf_sim.transports.inmemory import InMemoryServer

EPOCH = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)

# pytest-asyncio 1.5 deprecates overriding ``event_loop_policy`` in favour of the
# ``pytest_asyncio_loop_factories`` hook (see the last test), but a hook is for conftests & plugins,
# and applies to whole directories; the fixture is the only per-module way, and it still works.
pytestmark = pytest.mark.filterwarnings('ignore:Overriding the "event_loop_policy" fixture is deprecated')
pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def event_loop_policy() -> asyncio.AbstractEventLoopPolicy:
    return virtualtime.VirtualTimePolicy()


def running_loop() -> VirtualTimeLoop:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    return loop


# -- the clock ----------------------------------------------------------------------------------


async def test_an_hour_of_sleep_takes_no_real_time() -> None:
    loop = running_loop()
    started = time.perf_counter()
    await asyncio.sleep(3600)
    assert time.perf_counter() - started < 1.0  # microseconds, really; a margin for loaded machines
    assert loop.time() == 3600.0
    assert loop.ticks == 3600 * virtualtime.TICKS_PER_SECOND


async def test_timers_fire_in_order_and_at_exact_ticks() -> None:
    loop = running_loop()
    fired: list[tuple[str, int]] = []
    for name, delay in [("c", 3.0), ("a", 0.000_001), ("e", 86_400 * 3 + 0.5), ("b", 0.3), ("d", 7.25)]:
        loop.call_later(delay, lambda name=name: fired.append((name, loop.ticks)))  # type: ignore[misc]
    await asyncio.sleep(86_400 * 4)
    assert fired == [("a", 1), ("b", 300_000), ("c", 3_000_000), ("d", 7_250_000), ("e", 259_200_500_000)]


async def test_ten_thousand_sleeps_do_not_drift() -> None:
    loop = running_loop()
    for i in range(1, 10_001):
        await asyncio.sleep(0.1)
        assert loop.ticks == i * 100_000
    assert loop.time() == 1000.0


async def test_tiny_sleeps_neither_spin_nor_hang() -> None:
    loop = running_loop()
    started = time.perf_counter()
    for delay in [1e-9, 1e-7, 4e-7, 1e-12]:
        before = loop.ticks
        await asyncio.sleep(delay)
        assert loop.ticks == before + 1  # a sub-tick sleep takes exactly one tick: rounded up, never zero
    for _ in range(1000):
        await asyncio.sleep(1e-9)
    assert loop.ticks == 1004
    assert time.perf_counter() - started < 2.0  # a spin or a hang would never end; this is a loose bound


async def test_the_wall_clock_follows_the_loop() -> None:
    loop = running_loop()
    clock = virtualtime.loop_clock(loop, EPOCH)
    ambient = virtualtime.loop_clock(None)  # the running loop & its own epoch
    assert clock() == EPOCH
    assert ambient() == loop.now() == virtualtime.DEFAULT_EPOCH
    await asyncio.sleep(90.000_001)
    assert clock() == EPOCH + datetime.timedelta(seconds=90, microseconds=1)
    assert ambient() == virtualtime.DEFAULT_EPOCH + datetime.timedelta(seconds=90, microseconds=1)


def test_naive_epochs_are_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        virtualtime.new_virtual_loop(epoch=datetime.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        virtualtime.loop_clock(None, datetime.datetime(2030, 1, 1))


# -- jumping only when nothing else can run -----------------------------------------------------


@pytest.mark.parametrize(("inner", "timeout"), [(1.0, 2.0), (0.999_999, 1.0), (59.0, 60.0), (0.0, 0.000_001)])
async def test_wait_for_never_times_out_a_shorter_inner_sleep(inner: float, timeout: float) -> None:
    async def innermost() -> str:
        return await asyncio.sleep(inner, "done")

    async def middle() -> str:
        return await asyncio.create_task(innermost())

    async def nested() -> str:
        # A task in a task in a task: each one is created after the timeout's timer already exists.
        return await asyncio.create_task(middle())

    loop = running_loop()
    assert await asyncio.wait_for(asyncio.sleep(inner, "done"), timeout) == "done"
    assert await asyncio.wait_for(nested(), timeout) == "done"
    assert loop.time() == pytest.approx(2 * inner, abs=1e-9)


async def test_asyncio_timeout_fires_at_its_exact_time_and_not_before_inner_sleeps() -> None:
    loop = running_loop()
    async with asyncio.timeout(5):
        await asyncio.sleep(4.999_999)
    assert loop.ticks == 4_999_999
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(5):
            await asyncio.sleep(10)
    assert loop.ticks == 9_999_999


async def test_wait_for_times_out_a_longer_inner_sleep_exactly() -> None:
    loop = running_loop()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.sleep(3600), 60)
    assert loop.time() == 60.0


async def test_in_memory_io_runs_before_any_jump() -> None:
    # A queue ping-pong of 1000 messages under a 1-tick timeout: the I/O never lets the clock move.
    loop = running_loop()
    ping: asyncio.Queue[int] = asyncio.Queue()
    pong: asyncio.Queue[int] = asyncio.Queue()

    async def echo() -> None:
        while True:
            await pong.put(await ping.get())

    task = asyncio.create_task(echo())
    async with asyncio.timeout(0.000_001):
        for i in range(1000):
            await ping.put(i)
            assert await pong.get() == i
    task.cancel()
    assert loop.ticks == 0


# -- executor jobs hold the time ----------------------------------------------------------------


class PollCounter:
    """Counts the real (system-call) polls of a loop's selector."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self.selector = loop._vt_gate.selector
        self.original = self.selector.select
        self.polls = 0
        self.selector.select = self.select  # type: ignore[method-assign]

    def select(self, timeout: float | None = None) -> Any:
        self.polls += 1
        return self.original(timeout)

    def restore(self) -> None:
        self.selector.select = self.original  # type: ignore[method-assign]


async def test_busy_iterations_skip_the_polls_but_not_the_wakeups() -> None:
    loop = running_loop()
    counter = PollCounter(loop)
    try:
        for _ in range(100):
            await asyncio.sleep(0)
        assert counter.polls < 10  # nothing but the self-pipe, and nobody wrote into it

        calls: list[int] = []
        counter.polls = 0
        for index in range(20):
            loop.call_soon_threadsafe(calls.append, index)  # marks the loop as woken
            await asyncio.sleep(0)
        assert calls == list(range(20))
        assert counter.polls >= 20  # the self-pipe is read after every wake-up
    finally:
        counter.restore()


async def test_executor_jobs_hold_the_time_until_they_return() -> None:
    loop = running_loop()
    sleeper = asyncio.create_task(asyncio.sleep(10, "slept"))
    await asyncio.sleep(0)  # the sleeper's timer is scheduled
    before = loop.ticks
    started = time.perf_counter()
    await loop.run_in_executor(None, time.sleep, 0.2)
    assert time.perf_counter() - started >= 0.2
    assert loop.ticks == before  # the loop time advanced by 0 while the thread ran
    assert not sleeper.done()
    assert await sleeper == "slept"
    assert loop.time() == 10.0


async def test_to_thread_and_own_executors_hold_the_time_too() -> None:
    import concurrent.futures

    loop = running_loop()
    sleeper = asyncio.create_task(asyncio.sleep(0.001))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as executor:
        await asyncio.gather(
            asyncio.to_thread(time.sleep, 0.05),
            loop.run_in_executor(executor, time.sleep, 0.05),
        )
    assert loop.ticks == 0
    assert not sleeper.done()
    await sleeper
    assert loop.ticks == 1000


async def test_executor_jobs_can_call_into_the_loop_meanwhile() -> None:
    # As kopf's sync handlers post k8s-events: a thread-safe call into the loop, waited for in the thread.
    loop = running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()

    def handler() -> str:
        for i in range(3):
            asyncio.run_coroutine_threadsafe(queue.put(f"event {i}"), loop).result(timeout=5)
        return "handled"

    assert await loop.run_in_executor(None, handler) == "handled"
    assert [queue.get_nowait() for _ in range(3)] == ["event 0", "event 1", "event 2"]
    assert loop.ticks == 0


def test_an_executor_job_waiting_for_the_loops_timers_is_reported() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()

        def sync_handler() -> None:  # waits for a timer that cannot fire while the thread holds the time
            asyncio.run_coroutine_threadsafe(asyncio.sleep(1), loop).result()

        await loop.run_in_executor(None, sync_handler)

    with pytest.raises(DeadlockError) as err:
        virtualtime.run(main(), executor_timeout=0.2)
    assert "test_an_executor_job_waiting_for_the_loops_timers_is_reported.<locals>.main.<locals>.sync_handler" in str(
        err.value
    )
    assert "Executor jobs hold the loop time at 0.0" in str(err.value)


# -- deadlocks, livelocks & real I/O are errors, not hangs --------------------------------------


def test_two_tasks_awaiting_each_other_is_a_deadlock() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut_a: asyncio.Future[None] = loop.create_future()
        fut_b: asyncio.Future[None] = loop.create_future()

        async def alice() -> None:
            await fut_b
            fut_a.set_result(None)

        async def bob() -> None:
            await fut_a
            fut_b.set_result(None)

        await asyncio.sleep(60)  # timers do not count once they are over
        await asyncio.gather(asyncio.create_task(alice(), name="alice"), asyncio.create_task(bob(), name="bob"))

    started = time.perf_counter()
    with pytest.raises(DeadlockError) as err:
        virtualtime.run(main())
    assert time.perf_counter() - started < 1.0
    message = str(err.value)
    assert message.startswith("Deadlock at loop time 60.0: nothing can run")
    assert "Pending tasks (3):" in message
    assert (
        "Task 'alice' running test_two_tasks_awaiting_each_other_is_a_deadlock.<locals>.main.<locals>.alice()"
        in message
    )
    assert "Task 'bob' running test_two_tasks_awaiting_each_other_is_a_deadlock.<locals>.main.<locals>.bob()" in message
    assert f"({__file__}:" in message  # where they wait
    assert err.value.loop_time == 60.0
    assert {task.get_name() for task in err.value.tasks} >= {"alice", "bob"}


def test_waiting_for_an_event_nobody_sets_is_a_deadlock() -> None:
    async def waiter(event: asyncio.Event) -> None:
        await event.wait()

    async def main() -> None:
        await asyncio.create_task(waiter(asyncio.Event()), name="the-waiter")

    with pytest.raises(DeadlockError) as err:
        virtualtime.run(main())
    message = str(err.value)
    assert "Task 'the-waiter' running test_waiting_for_an_event_nobody_sets_is_a_deadlock.<locals>.waiter():" in message
    assert "at Event.wait (" in message
    assert f"<locals>.waiter ({__file__}:" in message


def test_a_deadlock_behind_a_timeout_is_no_deadlock() -> None:
    async def main() -> float:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), 3600)
        return asyncio.get_running_loop().time()

    assert virtualtime.run(main()) == 3600.0


def test_timers_that_never_bring_the_awaited_pass_the_time_limit() -> None:
    ticks: list[float] = []

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        for _ in range(10**9):
            await asyncio.sleep(60)
            ticks.append(loop.time())

    async def main() -> None:
        asyncio.create_task(ticker(), name="ticker")  # noqa: RUF006
        await asyncio.Event().wait()

    with pytest.raises(TimeLimitError) as err:
        virtualtime.run(main(), time_limit=3600)
    assert err.value.loop_time == 3600.0
    assert ticks == [60.0 * i for i in range(1, 61)]
    assert (
        "Task 'ticker' running test_timers_that_never_bring_the_awaited_pass_the_time_limit.<locals>.ticker()"
        in str(err.value)
    )


def test_waiting_on_real_sockets_is_reported() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        left, right = socket.socketpair()
        left.setblocking(False)
        loop.add_reader(left.fileno(), left.recv, 1)
        try:
            await asyncio.sleep(1)
        finally:
            loop.remove_reader(left.fileno())
            left.close()
            right.close()

    with pytest.raises(RealIOError, match=r"real I/O to wait for.*\n  - fd \d+ .*reader=<Handle socket.recv"):
        virtualtime.run(main())


# -- the simulated cluster in virtual time ------------------------------------------------------


async def test_a_watch_stream_over_ten_virtual_minutes_takes_no_real_time() -> None:
    loop = running_loop()
    cluster = Cluster(clock=virtualtime.loop_clock(loop, EPOCH), uids=SeededUids(1))
    url = "/api/v1/namespaces/default/configmaps"
    started = time.perf_counter()
    no_timeout = aiohttp.ClientTimeout(total=None)  # the default of 5 minutes would fire, in virtual time too
    async with InMemoryServer(build_app(cluster)) as server, server.session(timeout=no_timeout) as session:

        async def watch() -> list[dict[str, Any]]:
            params = {"watch": "true", "timeoutSeconds": "600", "resourceVersion": "0"}
            async with session.get(url, params=params) as response:
                assert response.status == 200
                return [json.loads(line) async for line in response.content]

        async def change_every_minute() -> None:
            for i in range(1, 10):
                await asyncio.sleep(60)
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}"}}
                async with session.post(url, json=body) as response:
                    assert response.status == 201

        events, _ = await asyncio.gather(watch(), change_every_minute())

    assert time.perf_counter() - started < 1.0
    assert loop.time() == pytest.approx(600, abs=0.01)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", f"cm{i}") for i in range(1, 10)]
    created = [parse_timestamp(e["object"]["metadata"]["creationTimestamp"]) for e in events]
    assert created == [EPOCH + datetime.timedelta(minutes=i) for i in range(1, 10)]


# -- one loop per run, per test, per example: no accumulation -----------------------------------


def test_consecutive_runs_each_start_at_zero() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.sleep(1000)
        return start, loop.time()

    assert virtualtime.run(main()) == (0.0, 1000.0)
    assert virtualtime.run(main()) == (0.0, 1000.0)
    assert virtualtime.run(main(), start=5) == (5.0, 1005.0)


@pytest.mark.parametrize("n", [1, 2, 3])
async def test_each_test_starts_at_zero(n: int) -> None:
    loop = running_loop()
    assert loop.time() == 0.0
    await asyncio.sleep(1000 * n)


@hypothesis.settings(max_examples=20, deadline=None)
@hypothesis.given(delay=st.integers(min_value=0, max_value=10**6))
@virtualtime.isolated
async def test_each_hypothesis_example_starts_at_zero(delay: int) -> None:
    loop = running_loop()
    assert loop.time() == 0.0
    await asyncio.sleep(delay)
    assert loop.time() == delay


# -- pytest-asyncio: fixtures and tests share the test's virtual loop ---------------------------


@pytest.fixture
async def prepared() -> AsyncIterator[tuple[asyncio.AbstractEventLoop, float]]:
    await asyncio.sleep(300)  # fixtures are in virtual time too
    yield asyncio.get_running_loop(), asyncio.get_running_loop().time()
    await asyncio.sleep(300)


async def test_fixtures_and_tests_share_one_virtual_loop(prepared: tuple[asyncio.AbstractEventLoop, float]) -> None:
    loop, fixture_time = prepared
    assert loop is running_loop()
    assert fixture_time == 300.0
    await asyncio.sleep(60)
    assert loop.time() == 360.0


def test_the_policy_makes_fresh_virtual_loops() -> None:
    policy = virtualtime.VirtualTimePolicy(start=10, epoch=EPOCH)
    first, second = policy.new_event_loop(), policy.new_event_loop()
    try:
        assert first is not second
        assert first.time() == second.time() == 10.0
        assert first.now() == EPOCH + datetime.timedelta(seconds=10)
    finally:
        first.close()
        second.close()


def test_the_pytest_asyncio_hook_runs_tests_and_fixtures_in_virtual_loops(pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        asyncio_mode = auto
        asyncio_default_fixture_loop_scope = function
    """)
    pytester.makeconftest("""
        from kopf_sim.timing import virtualtime

        def pytest_asyncio_loop_factories(config, item):
            return {"virtual": virtualtime.new_virtual_loop}
    """)
    pytester.makepyfile("""
        import asyncio
        import pytest
        from kopf_sim.timing.virtualtime import VirtualTimeLoop

        @pytest.fixture
        async def slept():
            await asyncio.sleep(600)
            return asyncio.get_running_loop()

        @pytest.mark.parametrize("n", [1, 2])
        async def test_virtual(slept, n):
            loop = asyncio.get_running_loop()
            assert isinstance(loop, VirtualTimeLoop) and loop is slept
            assert loop.time() == 600.0
            await asyncio.sleep(3600 * n)
            assert loop.time() == 600.0 + 3600 * n

        async def test_deadlocked():
            await asyncio.Event().wait()
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "error::DeprecationWarning")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*DeadlockError: Deadlock at loop time 0.0: nothing can run*"])
    result.stdout.fnmatch_lines(["*Task 'Task-*' running test_deadlocked():*"])
