"""Sub-handlers: declared in the handlers, executed in their own cycles."""

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.patches import Patch
from kopf._core.actions import lifecycles
from kopf._core.actions.execution import (
    HandlerChildrenRetry,
    HandlerOutcome,
    HandlerState,
    State,
    execute,
    execute_handler_once,
    run_handlers,
)
from kopf._core.actions.invocation import ActivityCause
from kopf._core.intents import subhandlers
from kopf._core.intents.registries import ChangingRegistry, OperatorRegistry
from kopf._core.intents.subexecution import SUBHANDLING

from .helpers import BODY, LOGGER, Calls, cycle, make_cause, make_handler, progress, run_once, simulate

# Virtual time everywhere: the delays of the retries are slept through instantly.
pytestmark = pytest.mark.looptime


@pytest.mark.parametrize(("lifecycle", "entries"), [(lifecycles.asap, 10), (lifecycles.all_at_once, 7)])
async def test_idempotence_example(
    settings: OperatorSettings, calls: Calls, lifecycle: lifecycles.LifeCycleFn, entries: int
) -> None:
    async def create_a(retry: int, **kwargs: Any) -> None:
        calls("a", kwargs)
        if retry < 2:
            raise kopf.TemporaryError("Not ready yet.", delay=10)

    async def create_b(retry: int, **kwargs: Any) -> None:
        calls("b", kwargs)
        if retry < 6:
            raise kopf.TemporaryError("Not ready yet.", delay=10)

    async def create(**kwargs: Any) -> None:
        calls("entering", kwargs)
        await execute(fns={"a": create_a, "b": create_b})
        calls("leaving", kwargs)

    body, executions = await simulate([make_handler(create)], settings, lifecycle=lifecycle)
    assert len(calls.times("entering")) == entries
    assert calls.times("leaving") == [60]
    assert len(calls.times("a")) == 3 and calls.times("a")[-1] == 20
    assert len(calls.times("b")) == 7 and calls.times("b")[-1] == 60
    assert executions[-1].state.succeeded == ["create"]
    assert executions[-1].state["create"].subrefs == ("create/a", "create/b")
    assert progress(body) == {}  # incl. the sub-handlers' records.


async def test_subhandlers_via_the_decorator_in_a_sync_parent(settings: OperatorSettings, calls: Calls) -> None:
    def create_fn(spec: Mapping[str, Any], **kwargs: Any) -> str:
        calls("parent", kwargs)
        for item in spec.get("items", []):

            @kopf.subhandler(id=item)
            def handle_item(item: str = item, **kwargs: Any) -> str:
                calls(item, kwargs)
                if kwargs["retry"] < 1:
                    raise kopf.TemporaryError("again", delay=5)
                return f"done-{item}"

        return "parent result"

    body, _ = await simulate([make_handler(create_fn)], settings, lifecycle=lifecycles.all_at_once)
    assert calls.times("item1") == [0, 5]
    assert calls.times("item2") == [0, 5]
    assert calls.times("parent") == [0, 5]
    assert body["status"]["create_fn/item1"] == "done-item1"
    assert body["status"]["create_fn/item2"] == "done-item2"
    # The parent's result is only from its last call, when its sub-handlers are all done.
    assert body["status"]["create_fn"] == "parent result"
    assert progress(body) == {}


async def test_subhandlers_via_register(settings: OperatorSettings, calls: Calls) -> None:
    async def create_it(spec: Mapping[str, Any], **kwargs: Any) -> None:
        calls("parent", kwargs)
        for task in spec.get("items", []):
            kopf.register(id=task, fn=functools.partial(record_task, task=task))

    async def record_task(task: str, **kwargs: Any) -> None:
        calls(task, kwargs)

    body, executions = await simulate([make_handler(create_it)], settings)
    assert calls.ids() == ["parent", "item1", "parent", "item2"]
    assert executions[-1].state["create_it"].subrefs == ("create_it/item1", "create_it/item2")
    assert progress(body) == {}


async def test_subhandlers_get_their_own_kwargs(settings: OperatorSettings) -> None:
    seen: dict[str, Any] = {}

    async def parent(**_: Any) -> None:
        @kopf.subhandler(id="child", param="child-param")
        async def child(**kwargs: Any) -> None:
            seen.update(kwargs)

    await simulate([make_handler(parent, param="parent-param")], settings, lifecycle=lifecycles.all_at_once)
    assert seen["param"] == "child-param"
    assert seen["retry"] == 0
    assert seen["body"]["metadata"]["name"] == "kex"


async def test_nested_subhandlers(settings: OperatorSettings, calls: Calls) -> None:
    async def parent(**_: Any) -> None:
        @kopf.subhandler(id="child")
        async def child(**_: Any) -> None:
            @kopf.subhandler(id="grandchild")
            async def grandchild(**kwargs: Any) -> str:
                calls("grandchild", kwargs)
                return "deep"

    body, executions = await simulate([make_handler(parent)], settings, lifecycle=lifecycles.all_at_once)
    assert len(executions) == 1
    assert calls.ids() == ["grandchild"]
    assert body["status"]["parent/child/grandchild"] == "deep"
    assert progress(body) == {}


async def test_nested_subhandlers_purged_across_cycles(settings: OperatorSettings) -> None:
    async def parent(**_: Any) -> None:
        for child_id in ["child1", "child2"]:

            @kopf.subhandler(id=child_id)
            async def child(**_: Any) -> None:
                @kopf.subhandler(id="grandchild")
                async def grandchild(**_: Any) -> str:
                    return "deep"

    body, _, execution = await cycle([make_handler(parent)], BODY, settings)
    assert not execution.done  # one child (with its grandchild) per cycle.
    # parent, child1 & its grandchild, and the pending child2 (recorded as started); smart: annotations only.
    assert len(progress(body)) == 4
    body, _, execution = await cycle([make_handler(parent)], body, settings)
    assert execution.done
    assert body["status"]["parent/child1/grandchild"] == "deep"
    assert body["status"]["parent/child2/grandchild"] == "deep"
    assert progress(body) == {}


async def test_execute_with_a_list_of_fns(settings: OperatorSettings, calls: Calls) -> None:
    async def first(**kwargs: Any) -> None:
        calls("first", kwargs)

    async def second(**kwargs: Any) -> None:
        calls("second", kwargs)

    async def parent(**_: Any) -> None:
        await execute(fns=[first, second], lifecycle=lifecycles.all_at_once)

    _, executions = await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["first", "second"]
    assert len(executions) == 1
    assert executions[-1].state["parent"].subrefs == ("parent/first", "parent/second")


async def test_execute_with_handlers_and_registry(settings: OperatorSettings, calls: Calls) -> None:
    registry = OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    async def from_registry(**kwargs: Any) -> None:
        calls("from_registry", kwargs)

    @kopf.on.update("kopfexamples", registry=registry)
    async def not_for_creation(**kwargs: Any) -> None:
        calls("not_for_creation", kwargs)

    explicit = make_handler(lambda **kw: calls("explicit", kw), id="explicit", reason=None)

    async def parent(**_: Any) -> None:
        await execute(handlers=[explicit])
        await execute(registry=registry)

    await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["explicit", "from_registry"]


async def test_subhandlers_are_filtered(settings: OperatorSettings, calls: Calls) -> None:
    async def parent(**_: Any) -> None:
        @kopf.subhandler(id="matching", labels={"app": "demo"})
        async def matching(**kwargs: Any) -> None:
            calls("matching", kwargs)

        @kopf.subhandler(id="mismatching", labels={"app": "other"})
        async def mismatching(**kwargs: Any) -> None:
            calls("mismatching", kwargs)

    await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["matching"]


async def test_failed_subhandlers_do_not_fail_the_parent(settings: OperatorSettings, calls: Calls) -> None:
    """As in the published framework: ``kopf.execute()`` returns when the sub-handlers are finished, failed too."""

    async def parent(**kwargs: Any) -> str:
        calls("entering", kwargs)
        await execute(fns={"bad": bad})
        calls("leaving", kwargs)
        return "after"

    async def bad(**_: Any) -> None:
        raise kopf.PermanentError("bad child")

    body, executions = await simulate([make_handler(parent)], settings)
    assert calls.ids() == ["entering", "leaving"]  # the child fails at once; the parent goes on.
    assert executions[-1].state.succeeded == ["parent"]
    assert executions[-1].state.failed == []
    assert body["status"]["parent"] == "after"
    assert progress(body) == {}


async def test_failed_declared_subhandlers_do_not_fail_the_parent(
    settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    def parent(**_: Any) -> None:
        @kopf.subhandler(id="good")
        def good(**_: Any) -> str:
            return "g"

        @kopf.subhandler(id="broken")
        def broken(**_: Any) -> None:
            raise kopf.PermanentError("the child cannot succeed")

    caplog.set_level(logging.INFO)
    body, executions = await simulate([make_handler(parent)], settings)
    assert executions[-1].state.succeeded == ["parent"]
    assert body["status"]["parent/good"] == "g"
    messages = [record.getMessage() for record in caplog.records if record.levelno >= logging.INFO]
    assert messages == [
        "Handler 'parent/good' succeeded.",
        "Handler 'parent/broken' failed permanently: the child cannot succeed",
        "Handler 'parent' succeeded.",
    ]
    assert progress(body) == {}


async def test_parents_waiting_for_children_consume_their_retries(
    settings: OperatorSettings, calls: Calls, caplog: pytest.LogCaptureFixture
) -> None:
    """As in the published framework: every re-entry of a waiting parent is an attempt that counts."""

    async def parent(**kwargs: Any) -> None:
        calls("parent", kwargs)
        await execute(fns={"a": child, "b": child, "c": child})

    async def child(**kwargs: Any) -> None:
        calls("child", kwargs)

    caplog.set_level(logging.DEBUG)
    body, executions = await simulate([make_handler(parent, retries=2)], settings)
    assert [kwargs["retry"] for id, _, kwargs in calls.log if id == "parent"] == [0, 1]
    assert calls.ids() == ["parent", "child", "parent", "child"]  # the 3rd attempt is not made.
    assert executions[-1].state.failed == ["parent"]
    assert isinstance(executions[-1].outcomes["parent"].exception, kopf.HandlerRetriesError)
    messages = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert messages[-2:] == [
        (logging.DEBUG, "Handler 'parent' is invoked."),
        (logging.ERROR, "Handler 'parent' has exceeded 2 retries."),  # not as "failed permanently: …"
    ]
    assert progress(body) == {}  # incl. the sub-handlers' records.


async def test_parents_waiting_for_children_count_their_retries(settings: OperatorSettings, calls: Calls) -> None:
    """The parent's ``retry`` grows on every re-entry, its record's ``retries`` too, with ``message: "None"``."""

    async def parent(**kwargs: Any) -> None:
        calls("parent", kwargs)
        await execute(fns={"child": child})

    async def child(retry: int, **kwargs: Any) -> None:
        calls("child", kwargs)
        if retry < 3:
            raise kopf.TemporaryError("not ready", delay=1)

    body, _, _ = await cycle([make_handler(parent)], BODY, settings)
    records = progress(body)  # by the storages' keys: "parent" or "kopf.zalando.org/parent", and so on.
    record = next(record for key, record in records.items() if key.endswith("parent"))
    child_record = next(record for key, record in records.items() if key.endswith("child"))
    assert (record["retries"], record["message"], record["success"], record["failure"]) == (1, "None", False, False)
    assert record["subrefs"] == ["parent/child"]
    assert record["delayed"] == child_record["delayed"]  # when the sub-handler is due.

    calls.log.clear()
    body, executions = await simulate([make_handler(parent)], settings, body=body)
    assert [kwargs["retry"] for id, _, kwargs in calls.log if id == "parent"] == [1, 2, 3]
    assert executions[-1].state.succeeded == ["parent"]
    assert executions[-1].state["parent"].retries == 4
    assert progress(body) == {}


async def test_parents_waiting_for_children_time_out_on_reentry(
    settings: OperatorSettings, calls: Calls, caplog: pytest.LogCaptureFixture
) -> None:
    """The parent is not failed ahead of its timeout while waiting: it is re-entered, then stopped."""

    async def parent(**kwargs: Any) -> None:
        calls("parent", kwargs)
        await execute(fns={"child": child})

    async def child(**kwargs: Any) -> None:
        calls("child", kwargs)
        raise kopf.TemporaryError("not ready", delay=1)

    _, executions = await simulate([make_handler(parent, timeout=1.5)], settings)
    assert calls.times("parent") == [0, 1]
    assert calls.times("child") == [0, 1]
    assert isinstance(executions[-1].outcomes["parent"].exception, kopf.HandlerTimeoutError)
    assert asyncio.get_running_loop().time() == pytest.approx(2)
    errors = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert errors[-1].startswith("Handler 'parent' has timed out after 0:00:02")


async def test_execute_outside_of_handlers_fails() -> None:
    with pytest.raises(RuntimeError, match="inside of the change-detecting handlers"):
        await execute(fns={"a": lambda **_: None})


async def test_execute_with_several_sources_fails(settings: OperatorSettings) -> None:
    async def parent(**_: Any) -> None:
        await execute(fns=[], handlers=[])

    outcome = await run_once(make_handler(parent))
    assert isinstance(outcome.exception, TypeError)


async def test_declaring_subhandlers_outside_of_handlers_fails() -> None:
    with pytest.raises(subhandlers.NoParentHandlerError):
        kopf.register(lambda **_: None, id="x")


async def test_without_the_subhandling_hooks_only_explicit_handlers_work() -> None:
    seen: list[str] = []
    child = make_handler(lambda **_: seen.append("child"), id="child", reason=None)

    async def explicit(**_: Any) -> None:
        await execute(handlers=[child], lifecycle=lifecycles.all_at_once)

    async def by_fns(**_: Any) -> None:
        await execute(fns={"x": lambda **_: None})

    def declaring(**_: Any) -> None:
        kopf.register(lambda **_: None, id="x")

    settings = OperatorSettings()
    outcomes = {}
    for fn in [explicit, by_fns, declaring]:
        outcomes[fn.__name__] = await execute_handler_once(
            handler=make_handler(fn), state=HandlerState.from_scratch(), cause=make_cause(BODY), settings=settings
        )
    assert outcomes["explicit"] == HandlerOutcome(final=True, subrefs=("child",))
    assert seen == ["child"]
    assert isinstance(outcomes["by_fns"].exception, RuntimeError)
    assert isinstance(outcomes["declaring"].exception, subhandlers.NoParentHandlerError)


async def test_execute_with_an_explicit_cause_outside_of_handlers(settings: OperatorSettings) -> None:
    seen: list[str] = []
    handler = make_handler(lambda **_: seen.append("x"), id="x", reason=None)
    patch = Patch()
    await execute(handlers=[handler], cause=make_cause(BODY, patch))
    assert seen == ["x"]
    assert "kopf.zalando.org/x" in patch["metadata"]["annotations"]

    async def fail(**_: Any) -> None:
        raise kopf.TemporaryError("again", delay=7)

    with pytest.raises(HandlerChildrenRetry) as err:
        await execute(handlers=[make_handler(fail)], cause=make_cause(BODY))
    assert err.value.delay == pytest.approx(7, abs=0.1)


async def test_subregistry_is_isolated_per_handler_call() -> None:
    registries_seen: list[ChangingRegistry] = []

    def fn(**_: Any) -> None:
        registries_seen.append(subhandlers.get_current_subregistry())
        assert subhandlers.get_current_handler_id() == "fn"

    for _ in range(2):
        await run_once(make_handler(fn))
    assert len(registries_seen) == 2
    assert registries_seen[0] is not registries_seen[1]
    assert subhandlers.subregistry_var.get(None) is None


async def test_other_causes_with_in_memory_states(calls: Calls) -> None:
    """E.g. the activities: the same errors' semantics, but no persistence and no sub-handlers."""

    async def startup(retry: int, settings: OperatorSettings, **kwargs: Any) -> None:
        calls("startup", kwargs)
        if retry < 2:
            raise ValueError("not yet")

    async def declaring(**_: Any) -> None:
        kopf.register(lambda **_: None, id="x")

    settings = OperatorSettings()
    cause = ActivityCause(logger=LOGGER, activity="startup", settings=settings)
    handlers = [make_handler(startup, backoff=3), make_handler(declaring, errors=kopf.ErrorsMode.PERMANENT)]
    state = State({handler.id: HandlerState.from_scratch() for handler in handlers})
    for _ in range(10):
        if state.done:
            break
        outcomes = await run_handlers(
            handlers=handlers,
            state=state,
            cause=cause,
            settings=settings,
            subhandling=SUBHANDLING,
            lifecycle=lifecycles.all_at_once,
        )
        state = state.with_outcomes(outcomes)
        await asyncio.sleep(state.delay() or 0)
    assert calls.times("startup") == [0, 3, 6]
    assert state["startup"].success
    assert state["declaring"].failure
    assert "inside of a change-detecting handler" in (state["declaring"].message or "")
