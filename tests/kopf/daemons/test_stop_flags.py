"""The daemons stop-flags, sync and async."""

import asyncio
import threading
import time
from typing import Any

import pytest

from kopf._core.engines.daemons import (
    AsyncDaemonStopped,
    DaemonStopped,
    DaemonStopper,
    DaemonStoppingReason,
    SyncDaemonStopped,
)

from .helpers import looptime


async def test_reasons_are_documented_flags() -> None:
    assert DaemonStoppingReason.DONE.value == 1
    assert DaemonStoppingReason.FILTERS_MISMATCH.value == 2
    assert DaemonStoppingReason.RESOURCE_DELETED.value == 4
    assert DaemonStoppingReason.OPERATOR_PAUSING.value == 8
    assert DaemonStoppingReason.OPERATOR_EXITING.value == 16
    assert DaemonStoppingReason.DAEMON_SIGNALLED.value == 32
    assert DaemonStoppingReason.DAEMON_CANCELLED.value == 64
    assert DaemonStoppingReason.DAEMON_ABANDONED.value == 128
    combined = DaemonStoppingReason.RESOURCE_DELETED | DaemonStoppingReason.OPERATOR_EXITING
    assert DaemonStoppingReason.RESOURCE_DELETED in combined
    assert not DaemonStoppingReason.NONE


@looptime
async def test_async_flag_is_truthy_when_set_and_awaitable() -> None:
    stopper = DaemonStopper()
    stopped = AsyncDaemonStopped(stopper)
    assert isinstance(stopped, DaemonStopped)
    assert not stopped and not stopped.is_set()
    assert stopped.reason == DaemonStoppingReason.NONE

    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await stopped.wait(5) is False
    assert loop.time() - start == pytest.approx(5)

    loop.call_later(3, stopper.set, DaemonStoppingReason.RESOURCE_DELETED)
    assert await stopped.wait(100) is True
    assert loop.time() - start == pytest.approx(8)
    assert stopped and stopped.is_set()
    assert stopped.reason == DaemonStoppingReason.RESOURCE_DELETED
    await stopped  # no waiting when set.
    stopper.set(DaemonStoppingReason.OPERATOR_EXITING)
    assert stopped.reason == DaemonStoppingReason.RESOURCE_DELETED | DaemonStoppingReason.OPERATOR_EXITING


async def test_sync_flag_wakes_up_threads_at_once() -> None:
    stopper = DaemonStopper()
    stopped = SyncDaemonStopped(stopper)
    results: list[Any] = []

    def thread_fn() -> None:
        results.append(stopped.wait(0.01))  # times out: not set.
        started = time.monotonic()
        results.append(stopped.wait(10))
        results.append(time.monotonic() - started)

    thread = threading.Thread(target=thread_fn)
    thread.start()
    await asyncio.sleep(0.05)
    stopper.set()
    thread.join(1)
    assert not thread.is_alive()
    assert results[0] is False
    assert results[1] is True
    assert results[2] < 1
    assert stopped.reason == DaemonStoppingReason.DAEMON_SIGNALLED
