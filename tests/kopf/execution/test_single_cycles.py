"""Single handling cycles: the results, the progress records, their purging."""

import datetime
import json
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.configs.progress import AnnotationsProgressStorage, StatusProgressStorage
from kopf._core.actions import lifecycles
from kopf._core.actions.execution import HandlerOutcome
from kopf._core.intents.causes import Reason

from .helpers import BODY, Calls, cycle, make_handler, progress

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


async def test_a_sync_handler_succeeds_and_its_result_goes_to_the_status(settings: OperatorSettings) -> None:
    def fn(**_: Any) -> int:
        return 100

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert execution.done
    assert execution.delay is None
    assert execution.outcomes == {"fn": HandlerOutcome(final=True, result=100)}
    assert body["status"]["fn"] == 100
    assert progress(body) == {}  # finished in one cycle: no records are written at all.


async def test_a_finished_cycle_writes_no_records_and_removes_the_earlier_ones(settings: OperatorSettings) -> None:
    stored: list[str] = []
    storage = settings.persistence.progress_storage
    original_store = storage.store

    def spy(**kwargs: Any) -> None:
        stored.append(kwargs["key"])
        original_store(**kwargs)

    storage.store = spy  # type: ignore[method-assign]
    attempts: list[None] = []

    def fn(**_: Any) -> int:
        attempts.append(None)
        if len(attempts) == 1:
            raise kopf.TemporaryError("not yet", delay=0)
        return 100

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert not execution.done and stored == ["fn"] and len(progress(body)) == 1
    body, _, execution = await cycle([make_handler(fn)], body, settings)
    assert execution.done and stored == ["fn"]  # not written only to be purged in the same patch
    assert progress(body) == {} and body["status"]["fn"] == 100


@pytest.mark.parametrize("result", [{"r1": 66, "r2": 666}, "a string", 0, False, [1, 2]])
async def test_results_are_stored_as_they_are(settings: OperatorSettings, result: Any) -> None:
    async def fn(**_: Any) -> Any:
        return result

    body, _, _ = await cycle([make_handler(fn)], BODY, settings)
    assert body["status"]["fn"] == result


async def test_none_results_store_nothing(settings: OperatorSettings) -> None:
    async def fn(**_: Any) -> None:
        return None

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert execution.done
    assert "fn" not in body.get("status", {})


async def test_no_handlers_is_done_at_once(settings: OperatorSettings) -> None:
    _, patch, execution = await cycle([], BODY, settings)
    assert execution.done
    assert execution.outcomes == {}
    assert patch == {}


async def test_one_handler_per_cycle_by_default(settings: OperatorSettings, calls: Calls) -> None:
    async def fn1(**kwargs: Any) -> str:
        calls("fn1", kwargs)
        return "one"

    async def fn2(**kwargs: Any) -> str:
        calls("fn2", kwargs)
        return "two"

    handlers = [make_handler(fn1), make_handler(fn2)]
    body, _, execution = await cycle(handlers, BODY, settings)
    assert calls.ids() == ["fn1"]
    assert not execution.done
    assert execution.delay == 0
    assert body["status"]["fn1"] == "one"
    records = progress(body)
    # The executed handler is done; the pending one is recorded as started (its runtime counts from now).
    assert set(records) <= {"kopf.zalando.org/fn1", "fn1", "kopf.zalando.org/fn2", "fn2"}
    for key, record in records.items():
        assert record["success"] is key.endswith("fn1")
        assert record["retries"] == (1 if key.endswith("fn1") else 0)
        assert record["purpose"] == "create"

    body, _, execution = await cycle(handlers, body, settings)
    assert calls.ids() == ["fn1", "fn2"]
    assert execution.done
    assert (body["status"]["fn1"], body["status"]["fn2"]) == ("one", "two")
    assert progress(body) == {}


async def test_all_at_once_lifecycle(settings: OperatorSettings, calls: Calls) -> None:
    handlers = [make_handler(lambda **kw: calls("a", kw), id="a"), make_handler(lambda **kw: calls("b", kw), id="b")]
    _, _, execution = await cycle(handlers, BODY, settings, lifecycle=lifecycles.all_at_once)
    assert calls.ids() == ["a", "b"]
    assert execution.done


async def test_default_lifecycle_can_be_changed(settings: OperatorSettings, calls: Calls) -> None:
    lifecycles.set_default_lifecycle(lifecycles.all_at_once)
    handlers = [make_handler(lambda **kw: calls("a", kw), id="a"), make_handler(lambda **kw: calls("b", kw), id="b")]
    _, _, execution = await cycle(handlers, BODY, settings)
    assert calls.ids() == ["a", "b"]
    assert execution.done


async def test_finished_handlers_are_not_executed_again(settings: OperatorSettings, calls: Calls) -> None:
    """Continuity: an operator restarted in the middle of a cycle continues where it stopped."""

    async def fn1(**kwargs: Any) -> None:
        calls("fn1", kwargs)

    async def fn2(**kwargs: Any) -> None:
        calls("fn2", kwargs)

    handlers = [make_handler(fn1), make_handler(fn2)]
    body, _, _ = await cycle(handlers, BODY, settings)
    body, _, _ = await cycle(handlers, body, settings, reason=Reason.CREATE)
    assert calls.ids() == ["fn1", "fn2"]


async def test_records_of_another_purpose_are_ignored(settings: OperatorSettings, calls: Calls) -> None:
    async def fn(**kwargs: Any) -> None:
        calls("fn", kwargs)

    async def other(**kwargs: Any) -> None:
        calls("other", kwargs)

    body, _, _ = await cycle([make_handler(fn), make_handler(other)], BODY, settings)
    assert calls.ids() == ["fn"]
    body, _, execution = await cycle([make_handler(fn, reason=Reason.DELETE)], body, settings, reason=Reason.DELETE)
    assert calls.ids() == ["fn", "fn"]
    assert execution.done


async def test_the_progress_records_in_the_annotations(calls: Calls) -> None:
    settings = OperatorSettings()
    settings.persistence.progress_storage = AnnotationsProgressStorage()

    async def fn(**_: Any) -> None:
        raise kopf.TemporaryError("not yet", delay=30)

    _, patch, execution = await cycle([make_handler(fn)], BODY, settings)
    record = json.loads(patch["metadata"]["annotations"]["kopf.zalando.org/fn"])
    assert set(record) == {"started", "delayed", "purpose", "retries", "success", "failure", "message"}
    assert record["retries"] == 1
    assert record["success"] is False and record["failure"] is False
    assert record["message"] == "not yet"
    assert record["purpose"] == "create"
    started = datetime.datetime.fromisoformat(record["started"])
    delayed = datetime.datetime.fromisoformat(record["delayed"])
    assert (delayed - started).total_seconds() == pytest.approx(30, abs=0.1)
    assert execution.delay == pytest.approx(30, abs=0.1)


async def test_the_progress_records_in_the_status() -> None:
    settings = OperatorSettings()
    settings.persistence.progress_storage = StatusProgressStorage(field="status.my-op")

    async def fn(**_: Any) -> None:
        raise kopf.PermanentError("never")

    async def fn2(**_: Any) -> None:
        pass

    body, patch, execution = await cycle([make_handler(fn), make_handler(fn2)], BODY, settings)
    record = patch["status"]["my-op"]["fn"]
    assert record["failure"] is True
    assert record["success"] is False
    assert record["message"] == "never"
    assert record["stopped"] is not None
    assert record["delayed"] is None  # kept as None in the status: it removes the stale values.
    assert "metadata" not in patch

    body, patch, execution = await cycle([make_handler(fn), make_handler(fn2)], body, settings)
    assert execution.done
    assert patch["status"]["my-op"]["fn"] is None  # purged.
    assert body["status"]["my-op"] == {}


async def test_failed_handlers_count_as_finished(settings: OperatorSettings) -> None:
    async def fn(**_: Any) -> None:
        raise kopf.PermanentError("never")

    body, _, execution = await cycle([make_handler(fn)], BODY, settings)
    assert execution.done
    assert execution.state.failed == ["fn"]
    assert execution.state.succeeded == []
    assert progress(body) == {}
