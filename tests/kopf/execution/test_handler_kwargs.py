"""The kwargs that the handlers get."""

import datetime
import threading
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import current
from kopf._cogs.structs.patches import Patch
from kopf._core.actions import lifecycles
from kopf._core.actions.execution import HandlerState, execute_handler_once
from kopf._core.intents.causes import Reason

from .helpers import BODY, Calls, cycle, make_cause, make_handler, simulate

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


async def test_retrying_kwargs_across_cycles(settings: OperatorSettings, calls: Calls) -> None:
    async def fn(retry: int, **kwargs: Any) -> None:
        calls("fn", kwargs)
        if retry < 2:
            raise kopf.TemporaryError("again", delay=10)

    _, _ = await simulate([make_handler(fn, param={"p": 1})], settings)
    kwargs = calls.kwargs("fn")
    assert len(kwargs) == 3
    assert [kw["param"] for kw in kwargs] == [{"p": 1}] * 3
    assert len({kw["started"] for kw in kwargs}) == 1
    assert isinstance(kwargs[0]["started"], datetime.datetime)
    assert [kw["runtime"].total_seconds() for kw in kwargs] == pytest.approx([0, 10, 20], abs=0.01)
    assert calls.times("fn") == [0, 10, 20]


async def test_all_kwargs_of_the_change_detecting_handlers() -> None:
    seen: dict[str, Any] = {}

    async def fn(**kwargs: Any) -> None:
        seen.update(kwargs)

    old = {**BODY, "spec": {"field": "old"}}
    cause = make_cause(BODY, old=old, new=BODY, reason=Reason.UPDATE)
    await execute_handler_once(
        handler=make_handler(fn, param="x"), state=HandlerState.from_scratch(), cause=cause, settings=OperatorSettings()
    )
    assert set(seen) == {
        "logger",
        "memo",
        "resource",
        "patch",
        "body",
        "spec",
        "meta",
        "status",
        "uid",
        "name",
        "namespace",
        "labels",
        "annotations",
        "reason",
        "diff",
        "old",
        "new",
        "param",
        "retry",
        "started",
        "runtime",
    }
    assert seen["body"] is cause.body
    assert seen["patch"] is cause.patch
    assert seen["reason"] == "update"
    assert seen["old"] is old and seen["new"] is BODY
    assert seen["retry"] == 0


async def test_field_handlers_get_the_field_values() -> None:
    seen: list[tuple[Any, Any, Any, Any]] = []

    async def fn(old: Any, new: Any, diff: Any, param: Any, **_: Any) -> None:
        seen.append((old, new, list(diff), param))

    old = {**BODY, "spec": {"field": "old"}}
    cause = make_cause(BODY, old=old, new=BODY, reason=Reason.UPDATE)
    for handler in [
        make_handler(fn, id="fn/spec.field", field="spec.field", param=10),
        make_handler(fn, id="fn/spec", field="spec", param=1),
    ]:
        await execute_handler_once(
            handler=handler, state=HandlerState.from_scratch(), cause=cause, settings=OperatorSettings()
        )
    assert seen[0] == ("old", "value", [("change", (), "old", "value")], 10)
    assert seen[1][0] == {"field": "old"}
    assert seen[1][1] == BODY["spec"]
    assert seen[1][3] == 1


async def test_the_object_is_current_in_sync_and_async_handlers(settings: OperatorSettings) -> None:
    seen: list[Any] = []

    def sfn(**_: Any) -> None:
        seen.append((threading.get_ident(), current.get_current_body()))

    async def afn(**_: Any) -> None:
        seen.append((threading.get_ident(), current.get_current_body()))

    await cycle([make_handler(sfn), make_handler(afn)], BODY, settings, lifecycle=lifecycles.all_at_once)
    assert seen[0][0] != threading.get_ident()
    assert seen[1][0] == threading.get_ident()
    assert all(body is not None and body["metadata"]["name"] == "kex" for _, body in seen)
    assert current.get_current_body() is None


async def test_sync_handlers_use_the_executor_of_the_settings(settings: OperatorSettings) -> None:
    import concurrent.futures

    names: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(thread_name_prefix="handlers-pool") as executor:
        settings.execution.executor = executor
        await cycle([make_handler(lambda **_: names.append(threading.current_thread().name), id="fn")], BODY, settings)
    assert names[0].startswith("handlers-pool")


async def test_handlers_can_patch_the_object(settings: OperatorSettings) -> None:
    def fn(patch: Patch, **_: Any) -> None:
        patch.metadata.labels["handled"] = "yes"
        patch.status["custom"] = {"x": 1}

    body, _, _ = await cycle([make_handler(fn)], BODY, settings)
    assert body["metadata"]["labels"] == {"app": "demo", "handled": "yes"}
    assert body["status"]["custom"] == {"x": 1}
