"""What the execution tests share: the handlers, causes & cycles they make, and a recorder of calls."""

import asyncio
import copy
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.configs.progress import (
    AnnotationsProgressStorage,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)
from kopf._cogs.structs import dicts
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.diffs import diff
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource
from kopf._core.actions.execution import (
    Execution,
    HandlerOutcome,
    HandlerState,
    execute_handler_once,
    execute_handlers_once,
)
from kopf._core.actions.invocation import ChangingCause
from kopf._core.intents import filters
from kopf._core.intents.causes import Reason
from kopf._core.intents.handlers import ChangingHandler
from kopf._core.intents.subexecution import SUBHANDLING

LOGGER = logging.getLogger("tests.execution")
RESOURCE = Resource("kopf.dev", "v1", "kopfexamples")
BODY: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "kex", "namespace": "ns", "uid": "uid-1", "labels": {"app": "demo"}},
    "spec": {"field": "value", "items": ["item1", "item2"]},
}

STORAGES: dict[str, Callable[[], ProgressStorage]] = {
    "annotations": AnnotationsProgressStorage,
    "status": StatusProgressStorage,
    "smart": SmartProgressStorage,
}


def make_handler(
    fn: Callable[..., Any],
    id: str | None = None,
    *,
    param: Any = None,
    errors: kopf.ErrorsMode | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    field: str | None = None,
    labels: Any = None,
    reason: Reason | None = Reason.CREATE,
) -> ChangingHandler:
    return ChangingHandler(
        fn=fn,
        id=HandlerId(id or fn.__name__),
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        selector=None,
        labels=filters.normalize_meta_filter(labels, what="labels"),
        annotations=None,
        when=None,
        field=dicts.parse_field(field) if field else None,
        value=None,
        reason=reason,
    )


def merge(body: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """The test's own JSON merge-patch (RFC 7386), as the API server would apply it."""
    result = copy.deepcopy(dict(body))
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            result[key] = merge(result[key] if isinstance(result.get(key), Mapping) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def make_cause(
    body: Mapping[str, Any],
    patch: Patch | None = None,
    *,
    reason: str = Reason.CREATE,
    old: Any = None,
    new: Any = None,
) -> ChangingCause:
    return ChangingCause(
        logger=LOGGER,
        resource=RESOURCE,
        patch=patch if patch is not None else Patch(),
        body=Body(body),
        reason=reason,
        old=old,
        new=new,
        diff=diff(old, new),
    )


def progress(body: Mapping[str, Any]) -> dict[str, Any]:
    """All the progress records on the object, wherever they are stored."""
    annotations = body.get("metadata", {}).get("annotations", {})
    found = {
        key: json.loads(value)
        for key, value in annotations.items()
        if key.startswith("kopf.zalando.org/") and not key.endswith("touch-dummy")
    }
    found.update(dicts.resolve(body, ("status", "kopf", "progress"), {}))
    return found


async def cycle(
    handlers: Sequence[ChangingHandler],
    body: Mapping[str, Any],
    settings: OperatorSettings,
    **kwargs: Any,
) -> tuple[dict[str, Any], Patch, Execution]:
    patch = Patch()
    cause = make_cause(body, patch, reason=kwargs.pop("reason", Reason.CREATE))
    execution = await execute_handlers_once(
        handlers=handlers, cause=cause, settings=settings, subhandling=SUBHANDLING, **kwargs
    )
    return merge(body, patch), patch, execution


async def simulate(
    handlers: Sequence[ChangingHandler],
    settings: OperatorSettings,
    body: Mapping[str, Any] = BODY,
    *,
    max_cycles: int = 100,
    **kwargs: Any,
) -> tuple[dict[str, Any], list[Execution]]:
    """Run the cycles until done, applying the patches and sleeping the delays (in virtual time)."""
    executions: list[Execution] = []
    current_body = dict(body)
    for _ in range(max_cycles):
        current_body, _, execution = await cycle(handlers, current_body, settings, **kwargs)
        executions.append(execution)
        if execution.done:
            assert execution.delay is None
            return current_body, executions
        assert execution.delay is not None
        await asyncio.sleep(execution.delay)
    raise AssertionError(f"The handling has not finished in {max_cycles} cycles.")


class Calls:
    """A recorder of the calls: the handler ids, the loop times, and the kwargs."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop  # also for the sync handlers in their threads, where there is no running loop.
        self.log: list[tuple[str, float, dict[str, Any]]] = []

    def __call__(self, id: str, kwargs: dict[str, Any]) -> None:
        self.log.append((id, self.loop.time(), kwargs))

    def ids(self) -> list[str]:
        return [id for id, _, _ in self.log]

    def times(self, id: str) -> list[float]:
        return [round(time, 3) for i, time, _ in self.log if i == id]

    def kwargs(self, id: str) -> list[dict[str, Any]]:
        return [kwargs for i, _, kwargs in self.log if i == id]


async def run_once(
    handler: ChangingHandler, state: HandlerState | None = None, body: Mapping[str, Any] = BODY
) -> HandlerOutcome:
    return await execute_handler_once(
        handler=handler,
        state=state or HandlerState.from_scratch(purpose="create"),
        cause=make_cause(body),
        settings=OperatorSettings(),
        subhandling=SUBHANDLING,
    )
