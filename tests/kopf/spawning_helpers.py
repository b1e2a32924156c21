"""Shared helpers for the tests of the daemons, timers & indexing engines: handlers, bodies, patch sinks."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from typing import Any

from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch, merge_patched_view
from kopf._cogs.structs.references import Resource
from kopf._core.actions.errors import ErrorsMode
from kopf._core.intents.handlers import DaemonHandler, IndexingHandler, TimerHandler

LOGGER = logging.getLogger("tests.engines")
RESOURCE = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)


def make_body(
    name: str = "kex1",
    *,
    uid: str | None = None,
    spec: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "ns1",
) -> dict[str, Any]:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}",
            "labels": labels or {},
            "resourceVersion": "1",
        },
        "spec": spec if spec is not None else {"field": "value"},
    }


def daemon_handler(
    fn: Callable[..., Any],
    *,
    id: str = "daemon_fn",
    errors: ErrorsMode | None = ErrorsMode.TEMPORARY,
    backoff: float | None = 60,
    retries: int | None = None,
    timeout: float | None = None,
    initial_delay: float | None = None,
    cancellation_backoff: float | None = None,
    cancellation_timeout: float | None = None,
    cancellation_polling: float | None = None,
    param: Any = None,
) -> DaemonHandler:
    return DaemonHandler(
        fn=fn,
        id=HandlerId(id),
        param=param,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        selector=None,
        labels=None,
        annotations=None,
        when=None,
        field=None,
        value=None,
        initial_delay=initial_delay,
        cancellation_backoff=cancellation_backoff,
        cancellation_timeout=cancellation_timeout,
        cancellation_polling=cancellation_polling,
    )


def timer_handler(
    fn: Callable[..., Any],
    *,
    id: str = "timer_fn",
    interval: float | None = None,
    sharp: bool = False,
    idle: float | None = None,
    initial_delay: float | None = None,
    errors: ErrorsMode | None = ErrorsMode.TEMPORARY,
    backoff: float | None = 60,
    retries: int | None = None,
    timeout: float | None = None,
) -> TimerHandler:
    return TimerHandler(
        fn=fn,
        id=HandlerId(id),
        param=None,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        selector=None,
        labels=None,
        annotations=None,
        when=None,
        field=None,
        value=None,
        initial_delay=initial_delay,
        interval=interval,
        sharp=sharp,
        idle=idle,
    )


def index_handler(
    fn: Callable[..., Any],
    *,
    id: str = "index_fn",
    errors: ErrorsMode | None = ErrorsMode.IGNORED,
    backoff: float | None = 60,
    retries: int | None = None,
    timeout: float | None = None,
) -> IndexingHandler:
    return IndexingHandler(
        fn=fn,
        id=HandlerId(id),
        param=None,
        errors=errors,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        selector=None,
        labels=None,
        annotations=None,
        when=None,
        field=None,
        value=None,
    )


class PatchSink:
    """Records the patches of the daemons & timers; optionally, applies them to a raw body (a fake object)."""

    def __init__(self, body: dict[str, Any] | None = None) -> None:
        self.patches: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.body = body

    async def __call__(self, patch: Patch) -> None:
        self.patches.append(copy.deepcopy(dict(patch)))
        self.times.append(asyncio.get_running_loop().time())
        if self.body is not None:
            self.body = merge_patched_view(self.body, patch)

    @property
    def statuses(self) -> list[Any]:
        return [patch["status"] for patch in self.patches if "status" in patch]

    @property
    def touches(self) -> int:
        """How many patches were the "touches" of the dummy field (to cause a new event)."""
        return sum(1 for patch in self.patches if "dummy" in repr(patch))
