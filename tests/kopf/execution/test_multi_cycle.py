"""Multi-cycle simulations in virtual time: the body updated by the patches, the delays slept through."""

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.actions import lifecycles

from .helpers import Calls, make_handler, progress, simulate

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


async def test_simulation_with_retries_delays_and_failures(settings: OperatorSettings, calls: Calls) -> None:
    async def create_pvc(**kwargs: Any) -> dict[str, str]:
        calls("create_pvc", kwargs)
        return {"name": "pvc-1"}

    async def create_job(status: Mapping[str, Any], **kwargs: Any) -> dict[str, str]:
        calls("create_job", kwargs)
        if not status.get("create_pvc"):
            raise kopf.TemporaryError("PVC is not created yet.", delay=10)
        return {"name": "job-for-" + status["create_pvc"]["name"]}

    def flaky(retry: int, **kwargs: Any) -> None:
        calls("flaky", kwargs)
        if retry < 2:
            raise ValueError("environment is not ready")

    def fatal(**kwargs: Any) -> None:
        calls("fatal", kwargs)
        raise kopf.PermanentError("cannot do it")

    handlers = [
        make_handler(create_job),
        make_handler(create_pvc),
        make_handler(flaky, backoff=30),
        make_handler(fatal),
    ]
    body, executions = await simulate(handlers, settings)

    assert calls.times("create_job") == [0, 10]
    assert calls.times("create_pvc") == [0]
    assert calls.times("flaky") == [0, 30, 60]
    assert calls.times("fatal") == [0]
    assert asyncio.get_running_loop().time() == pytest.approx(60)
    assert body["status"]["create_pvc"] == {"name": "pvc-1"}
    assert body["status"]["create_job"] == {"name": "job-for-pvc-1"}
    assert "flaky" not in body["status"] and "fatal" not in body["status"]
    assert progress(body) == {}
    assert executions[-1].state.failed == ["fatal"]
    assert sorted(executions[-1].state.succeeded) == ["create_job", "create_pvc", "flaky"]


async def test_simulation_of_exhausted_retries(settings: OperatorSettings, calls: Calls) -> None:
    def fn(**kwargs: Any) -> None:
        calls("fn", kwargs)
        raise ValueError("boom")

    body, executions = await simulate([make_handler(fn, retries=3, backoff=5)], settings)
    assert calls.times("fn") == [0, 5, 10]
    assert isinstance(executions[-1].outcomes["fn"].exception, kopf.HandlerRetriesError)
    assert executions[-1].state["fn"].failure
    assert executions[-1].state["fn"].retries == 3
    assert progress(body) == {}


async def test_simulation_of_an_exceeded_timeout(settings: OperatorSettings, calls: Calls) -> None:
    def fn(**kwargs: Any) -> None:
        calls("fn", kwargs)
        raise kopf.TemporaryError("later", delay=60)

    _, executions = await simulate([make_handler(fn, timeout=100)], settings)
    assert calls.times("fn") == [0, 60]
    assert isinstance(executions[-1].outcomes["fn"].exception, kopf.HandlerTimeoutError)
    assert asyncio.get_running_loop().time() == pytest.approx(60)  # no waiting for a retry beyond the timeout


async def test_simulation_of_immediate_retries(settings: OperatorSettings, calls: Calls) -> None:
    async def fn(retry: int, **kwargs: Any) -> None:
        calls("fn", kwargs)
        if retry < 4:
            raise kopf.TemporaryError("again", delay=None)

    _, executions = await simulate([make_handler(fn)], settings)
    assert calls.times("fn") == [0, 0, 0, 0, 0]
    assert len(executions) == 5


async def test_simulation_asap_runs_the_fresh_handlers_before_the_retried_ones(
    settings: OperatorSettings, calls: Calls
) -> None:
    async def fn1(retry: int, **kwargs: Any) -> None:
        calls("fn1", kwargs)
        if retry < 1:
            raise kopf.TemporaryError("again", delay=None)

    async def fn2(**kwargs: Any) -> None:
        calls("fn2", kwargs)

    await simulate([make_handler(fn1), make_handler(fn2)], settings)
    assert calls.ids() == ["fn1", "fn2", "fn1"]


async def test_simulation_one_by_one_keeps_the_order(settings: OperatorSettings, calls: Calls) -> None:
    async def fn1(retry: int, **kwargs: Any) -> None:
        calls("fn1", kwargs)
        if retry < 1:
            raise kopf.TemporaryError("again", delay=None)

    async def fn2(**kwargs: Any) -> None:
        calls("fn2", kwargs)

    await simulate([make_handler(fn1), make_handler(fn2)], settings, lifecycle=lifecycles.one_by_one)
    assert calls.ids() == ["fn1", "fn1", "fn2"]
