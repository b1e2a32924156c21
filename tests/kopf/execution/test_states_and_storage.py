"""The handlers' states and their progress storage."""

import datetime
import json
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.progress import AnnotationsProgressStorage, StatusProgressStorage
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch
from kopf._core.actions.execution import HandlerChildrenRetry, HandlerOutcome, HandlerState, State, deliver_results

from .helpers import make_handler

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


def test_handler_state_round_trip() -> None:
    now = datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    state = HandlerState(
        started=now,
        stopped=now,
        delayed=None,
        purpose="update",
        retries=3,
        success=True,
        failure=False,
        message=None,
        subrefs=(HandlerId("a/b"),),
    )
    record = state.as_record()
    assert record == {
        "started": "2020-01-02T03:04:05+00:00",
        "stopped": "2020-01-02T03:04:05+00:00",
        "delayed": None,
        "purpose": "update",
        "retries": 3,
        "success": True,
        "failure": False,
        "message": None,
        "subrefs": ["a/b"],
    }
    assert HandlerState.from_record(record) == state


def test_handler_state_from_older_records() -> None:
    state = HandlerState.from_record({"started": "2020-01-02T03:04:05.123456", "retries": None, "delayed": "garbage"})
    assert state.started == datetime.datetime(2020, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.UTC)
    assert state.retries == 0
    assert state.delayed is None
    assert not state.finished


def test_handler_state_timing() -> None:
    now = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    later = now + datetime.timedelta(seconds=30)
    state = HandlerState(started=now, delayed=later)
    assert state.sleeping(now) and not state.awakened(now)
    assert state.delay(now) == 30
    assert state.awakened(later) and state.delay(later) == 0
    assert state.runtime(later) == datetime.timedelta(seconds=30)
    assert HandlerState(success=True).delay(now) is None
    assert not HandlerState(failure=True).awakened(now)


def test_handler_state_with_a_zero_delay_is_due_now() -> None:
    """As the published framework writes it: ``delayed`` is "now" for a zero delay, absent for ``None``."""
    now = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    state = HandlerState.from_scratch(purpose="create", now=now)
    zero = state.with_outcome(HandlerOutcome(final=False, delay=0, exception=kopf.TemporaryError("x")), now=now)
    none = state.with_outcome(HandlerOutcome(final=False, delay=None, exception=kopf.TemporaryError("x")), now=now)
    assert zero.as_record()["delayed"] == now.isoformat()
    assert none.as_record()["delayed"] is None
    assert zero.awakened(now) and none.awakened(now)
    assert zero.delay(now) == 0 and none.delay(now) == 0


def test_handler_state_with_outcomes() -> None:
    now = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    state = HandlerState.from_scratch(purpose="create", now=now)
    assert not state.dirty
    state = state.with_outcome(HandlerOutcome(final=False, delay=5, exception=ValueError("x")), now=now)
    assert (state.retries, state.delayed, state.message, state.dirty) == (
        1,
        now + datetime.timedelta(seconds=5),
        "x",
        True,
    )
    waiting = HandlerOutcome(final=False, delay=None, exception=HandlerChildrenRetry(delay=None), subrefs=("a",))
    state = state.with_outcome(waiting, now=now)
    assert (state.retries, state.delayed, state.subrefs, state.message) == (2, None, ("a",), "None")
    state = state.with_outcome(HandlerOutcome(final=True, result=1, subrefs=("a", "b")), now=now)
    assert (state.retries, state.success, state.failure, state.stopped, state.subrefs, state.message) == (
        3,
        True,
        False,
        now,
        ("a", "b"),
        None,
    )
    failed = HandlerState().with_outcome(HandlerOutcome(final=True, exception=kopf.PermanentError()), now=now)
    assert failed.failure and not failed.success and failed.message == ""  # as it is, as published


def test_state_store_writes_only_the_changed_states() -> None:
    storage = AnnotationsProgressStorage()
    body = Body(
        {
            "metadata": {
                "annotations": {
                    "kopf.zalando.org/old": json.dumps(
                        {"started": "2020-01-01T00:00:00", "retries": 1, "purpose": "create"}
                    ),
                }
            }
        }
    )
    handlers = [make_handler(lambda **_: None, id="old"), make_handler(lambda **_: None, id="new")]
    state = State.from_storage(body=body, storage=storage, handlers=handlers, purpose="create")
    assert state["old"].retries == 1
    assert state["new"].retries == 0
    patch = Patch()
    state.store(body=body, patch=patch, storage=storage)
    assert set(patch["metadata"]["annotations"]) == {"kopf.zalando.org/new"}  # the new one is stored at once
    record = json.loads(patch["metadata"]["annotations"]["kopf.zalando.org/new"])
    assert record["retries"] == 0 and record["purpose"] == "create" and "started" in record  # not yet executed
    stored = Body({"metadata": {"annotations": {**body.metadata.annotations, **patch["metadata"]["annotations"]}}})
    state = State.from_storage(body=stored, storage=storage, handlers=handlers, purpose="create")
    patch = Patch()
    state.store(body=stored, patch=patch, storage=storage)
    assert patch == {}  # nothing has changed since fetched: nothing is written
    state = state.with_outcomes({HandlerId("new"): HandlerOutcome(final=True)})
    state.store(body=stored, patch=patch, storage=storage)
    assert set(patch["metadata"]["annotations"]) == {"kopf.zalando.org/new"}


def test_state_purge_follows_the_subrefs_in_the_body_and_in_the_patch() -> None:
    storage = StatusProgressStorage()
    body = Body(
        {
            "status": {
                "kopf": {
                    "progress": {
                        "p": {"success": True, "subrefs": ["p/c"]},
                        "p/c": {"success": True, "subrefs": ["p/c/g"]},
                        "unrelated": {"success": True},
                    }
                }
            }
        }
    )
    patch = Patch(
        {
            "status": {
                "kopf": {"progress": {"p/c/g": {"success": True, "subrefs": ["p/c/g/x"]}, "p/c/g/x": {"success": True}}}
            }
        }
    )
    state = State.from_storage(body=body, storage=storage, handlers=[make_handler(lambda **_: None, id="p")])
    state.purge(body=body, patch=patch, storage=storage)
    assert patch == {"status": {"kopf": {"progress": {"p": None, "p/c": None}}}}


def test_state_purge_without_records_when_fetched_looks_none_up() -> None:
    storage = StatusProgressStorage()
    fetched: list[str] = []
    original_fetch = storage.fetch

    def spy(*, key: HandlerId, body: Body) -> Any:
        fetched.append(key)
        return original_fetch(key=key, body=body)

    storage.fetch = spy  # type: ignore[method-assign]
    body = Body({"status": {"kopf": {"progress": {"unrelated": {"success": True}}}}})
    state = State.from_storage(body=body, storage=storage, handlers=[make_handler(lambda **_: None, id="p")])
    assert fetched == ["p"]
    patch = Patch({"status": {"kopf": {"progress": {"p": {"success": True}}}}})  # e.g. stored in this cycle
    state.purge(body=body, patch=patch, storage=storage)
    assert fetched == ["p"]  # no records to look up for their sub-handlers: none were there, none ran
    assert patch == {}  # the pending record is removed from the patch (with its emptied parents)


def test_state_purge_removes_the_records_of_another_purpose_and_their_subrefs() -> None:
    storage = StatusProgressStorage()
    progress = {
        "p": {"purpose": "create", "subrefs": ["p/c"]},
        "p/c": {"purpose": "create", "success": True},
    }
    body = Body({"status": {"kopf": {"progress": progress}}})
    handler = make_handler(lambda **_: None, id="p")
    state = State.from_storage(body=body, storage=storage, handlers=[handler], purpose="delete")
    assert not state["p"].subrefs  # not used for this cycle: started from scratch
    patch = Patch()
    state.purge(body=body, patch=patch, storage=storage)
    assert patch == {"status": {"kopf": {"progress": {"p": None, "p/c": None}}}}


def test_deliver_results() -> None:
    patch = Patch()
    deliver_results(
        patch=patch,
        outcomes={
            HandlerId("a"): HandlerOutcome(final=True, result={"x": 1}),
            HandlerId("b"): HandlerOutcome(final=True, result=None),
            HandlerId("c"): HandlerOutcome(final=False, result="ignored", exception=ValueError()),
            HandlerId("d/e"): HandlerOutcome(final=True, result="nested id"),
        },
    )
    assert patch == {"status": {"a": {"x": 1}, "d/e": "nested id"}}
