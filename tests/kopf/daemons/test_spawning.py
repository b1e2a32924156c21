"""Spawning the daemons, and the kwargs they get."""

import asyncio
from typing import Any

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.ephemera import Memo
from kopf._core.engines.daemons import (
    AsyncDaemonStopped,
    DaemonsMemory,
    DaemonStopped,
    stop_all,
    stop_daemons,
)
from tests.helpers import wait_for

from ..spawning_helpers import RESOURCE, daemon_handler, make_body
from .helpers import looptime, spawn


@looptime
async def test_async_daemon_gets_the_documented_kwargs() -> None:
    seen: dict[str, Any] = {}

    async def fn(**kwargs: Any) -> None:
        seen.update(kwargs)
        await kwargs["stopped"].wait()

    memory = DaemonsMemory()
    memo = Memo()
    handler = daemon_handler(fn, param=123)
    await spawn([handler], memory, memo=memo, indices={"my_idx": {"k": ["v"]}})
    await wait_for(lambda: bool(seen))
    expected = {
        "body",
        "spec",
        "meta",
        "status",
        "uid",
        "name",
        "namespace",
        "labels",
        "annotations",
        "patch",
        "logger",
        "memo",
        "param",
        "resource",
        "stopped",
        "retry",
        "started",
        "runtime",
        "my_idx",
    }
    assert expected <= set(seen)
    assert isinstance(seen["stopped"], AsyncDaemonStopped)
    assert isinstance(seen["body"], Body)
    assert seen["name"] == "kex1" and seen["namespace"] == "ns1" and seen["uid"] == "uid-kex1"
    assert seen["param"] == 123 and seen["retry"] == 0
    assert seen["memo"] is memo
    assert seen["resource"] == RESOURCE
    assert seen["my_idx"] == {"k": ["v"]}

    assert await stop_daemons(settings=OperatorSettings(), memory=memory) is None
    assert not memory.running


@looptime
async def test_daemon_sees_the_live_body() -> None:
    fields: list[Any] = []

    async def fn(stopped: DaemonStopped, spec: Any, body: Any, **_: Any) -> None:
        while not stopped:
            fields.append((spec["field"], body["spec"]["field"]))
            await asyncio.sleep(10)

    memory = DaemonsMemory()
    handler = daemon_handler(fn)
    await spawn([handler], memory, body=make_body(spec={"field": "a"}))
    await asyncio.sleep(15)
    await spawn([handler], memory, body=make_body(spec={"field": "b"}))
    await asyncio.sleep(10)
    assert fields == [("a", "a"), ("a", "a"), ("b", "b")]
    assert len(memory.running) == 1  # not re-spawned on the next event.
    await stop_all([memory], settings=OperatorSettings())


@looptime
async def test_initial_delay_postpones_the_start() -> None:
    loop = asyncio.get_running_loop()
    starts: list[float] = []

    async def fn(stopped: DaemonStopped, **_: Any) -> None:
        starts.append(loop.time())
        await stopped.wait()

    memory = DaemonsMemory()
    start = loop.time()
    await spawn([daemon_handler(fn, initial_delay=30)], memory)
    await asyncio.sleep(29)
    assert not starts
    await asyncio.sleep(2)
    assert starts == [pytest.approx(start + 30)]
    await stop_all([memory], settings=OperatorSettings())


@looptime
async def test_daemon_stopped_during_the_initial_delay_is_never_called() -> None:
    calls: list[int] = []

    async def fn(**_: Any) -> None:
        calls.append(1)

    memory = DaemonsMemory()
    await spawn([daemon_handler(fn, initial_delay=30)], memory)
    await asyncio.sleep(10)
    assert await stop_daemons(settings=OperatorSettings(), memory=memory) is None
    await asyncio.sleep(100)
    assert not calls and not memory.running
