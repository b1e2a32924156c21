"""Applying the outcomes: the delays & the touch-patches."""

import asyncio
import logging
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.patches import Patch
from kopf._core.actions.application import build_touch_patch, get_delay, get_remaining_delay, touch
from kopf._core.actions.execution import HandlerState

from .helpers import BODY, Calls, make_handler, merge, run_once, simulate

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


def test_get_delay() -> None:
    assert get_delay([]) is None
    assert get_delay([None]) is None
    assert get_delay([10, 5.5, None, 30]) == 5.5
    assert get_delay([-1, 5]) == 0


async def test_get_remaining_delay() -> None:
    loop = asyncio.get_running_loop()
    since = loop.time()
    await asyncio.sleep(3)
    assert get_remaining_delay(10, since=since) == pytest.approx(7)
    assert get_remaining_delay(2, since=since) == 0
    assert get_remaining_delay(None, since=since) is None


async def test_touch(settings: OperatorSettings) -> None:
    patch = build_touch_patch(body=Body(BODY), settings=settings)
    assert patch  # something is touched: an annotation or a status field.
    body = merge(BODY, patch)
    await asyncio.sleep(1)
    patch2 = Patch()
    touch(body=Body(body), patch=patch2, settings=settings)
    assert patch2 and patch2 != patch  # a new value every time.
    body = merge(body, patch2)
    assert build_touch_patch(body=Body(body), settings=settings, done=True)  # the dummy is removed.
    assert not build_touch_patch(body=Body(BODY), settings=settings, done=True)  # nothing to remove.


async def test_simulation_of_the_default_backoff_from_settings(settings: OperatorSettings, calls: Calls) -> None:
    def fn(retry: int, **kwargs: Any) -> None:
        calls("fn", kwargs)
        if retry < 2:
            raise ValueError("again")

    settings.execution.default_backoff = 7  # the handler sets no backoff=: the settings' one is used
    await simulate([make_handler(fn)], settings)
    assert calls.times("fn") == [0, 7, 14]


async def test_messages_of_the_final_failures_as_published(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="tests.execution")

    async def temp(**_: Any) -> None:
        raise kopf.TemporaryError("temp-msg", delay=10)

    async def arbitrary(**_: Any) -> None:
        raise ValueError("arbitrary-msg")

    state = HandlerState.from_scratch(purpose="create")
    await run_once(make_handler(temp, retries=1), state=state)
    await run_once(make_handler(arbitrary, retries=1), state=state)
    await run_once(make_handler(arbitrary, errors=kopf.ErrorsMode.PERMANENT), state=state)
    await run_once(make_handler(arbitrary, errors=kopf.ErrorsMode.IGNORED), state=state)
    await run_once(make_handler(temp, timeout=5), state=state)
    await run_once(make_handler(arbitrary, timeout=5, backoff=10), state=state)
    messages = [record.getMessage() for record in caplog.records]
    assert "Handler 'temp' failed temporarily but will exceed 1 retries: temp-msg" in messages
    assert (
        "Handler 'arbitrary' failed with an exception and will stop now "
        "(it would exceed 1 retries on the next attempt): arbitrary-msg"
    ) in messages
    assert "Handler 'arbitrary' failed with an exception and will stop now: arbitrary-msg" in messages
    assert "Handler 'arbitrary' failed with an exception and will ignore it: arbitrary-msg" in messages
    assert "Handler 'temp' failed temporarily but will time out after 5 seconds: temp-msg" in messages
    assert (
        "Handler 'arbitrary' failed with an exception and will stop now "
        "(it would time out in 5 seconds on the next attempt): arbitrary-msg"
    ) in messages
