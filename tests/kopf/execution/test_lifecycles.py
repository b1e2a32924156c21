"""Lifecycles: which handlers run in a cycle."""

from collections.abc import Sequence
from typing import Any

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.ids import HandlerId
from kopf._core.actions import lifecycles
from kopf._core.actions.execution import HandlerState, State

from .helpers import BODY, cycle, make_handler, progress

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


def test_lifecycles() -> None:
    handlers = [make_handler(lambda **_: None, id=id) for id in ["a", "b", "c"]]
    state = {
        HandlerId("a"): HandlerState(retries=2),
        HandlerId("b"): HandlerState(retries=1),
        HandlerId("c"): HandlerState(retries=1),
    }
    assert [h.id for h in lifecycles.all_at_once(handlers)] == ["a", "b", "c"]
    assert [h.id for h in lifecycles.one_by_one(handlers)] == ["a"]
    assert [h.id for h in lifecycles.asap(handlers, state=state)] == ["b"]
    assert [h.id for h in lifecycles.asap(handlers)] == ["a"]
    assert len(lifecycles.randomized(handlers)) == 1
    assert sorted(h.id for h in lifecycles.shuffled(handlers)) == ["a", "b", "c"]
    for lifecycle in [
        lifecycles.all_at_once,
        lifecycles.one_by_one,
        lifecycles.asap,
        lifecycles.randomized,
        lifecycles.shuffled,
    ]:
        assert list(lifecycle([], state={})) == []


def test_default_lifecycle() -> None:
    assert lifecycles.get_default_lifecycle() is lifecycles.asap
    lifecycles.set_default_lifecycle(lifecycles.one_by_one)
    assert lifecycles.get_default_lifecycle() is lifecycles.one_by_one
    lifecycles.set_default_lifecycle(None)
    assert lifecycles.get_default_lifecycle() is lifecycles.asap


async def test_lifecycles_get_the_kwargs(settings: OperatorSettings) -> None:
    seen: dict[str, Any] = {}

    def lifecycle(handlers: Sequence[Any], **kwargs: Any) -> Sequence[Any]:
        seen.update(kwargs, handlers=handlers)
        return []

    handler = make_handler(lambda **_: None, id="a")
    _, patch, execution = await cycle([handler], BODY, settings, lifecycle=lifecycle)
    assert seen["handlers"] == [handler]
    assert isinstance(seen["state"], State)
    assert seen["body"]["metadata"]["name"] == "kex"
    assert not execution.done
    assert execution.outcomes == {}
    records = progress(patch)  # only the start of the pending handler is recorded: no results, no retries
    assert records and all(record["retries"] == 0 and not record["success"] for record in records.values())
    assert set(patch.get("status", {})) <= {"kopf"}
