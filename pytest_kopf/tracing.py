"""The trace of one run: the operator's API requests, the cluster's changes, kopf's log lines, the faults.

One line per happening, stamped with the loop's (virtual) time, in the order they happen. Nothing
in it comes from the wall clock, random uids or hash order, so the same seed and the same actions
give the same trace, byte for byte (compared by the determinism tests). The log lines of one run
are told from another's (two runs alternate in one process when a check compares them) by which
run is :meth:`Trace.active` at the moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from kopf_sim.store.watching import Change

from .cluster import SimKopfCluster

__all__ = ["Trace"]

_active: Trace | None = None


class _Dispatcher(logging.Handler):
    """Sends the records of the ``kopf`` loggers to the trace of the run active now (if any)."""

    def emit(self, record: logging.LogRecord) -> None:
        trace = _active
        if trace is not None:
            trace.log(record)


_dispatcher = _Dispatcher(logging.DEBUG)


class _Tee(list[str]):
    """The fault injector's log, copied into the trace as it grows."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace

    def append(self, line: str) -> None:
        super().append(line)
        self.trace.lines.append(f"{line.split(' ', 1)[0]} fault {line.split(' ', 1)[-1]}")


class Trace:
    """The lines of one run (see the module's docs); :attr:`records` are its kopf log records."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lines: list[str] = []
        #: The kopf log records of the run.
        self.records: list[logging.LogRecord] = []

    def add(self, kind: str, text: str) -> None:
        self.lines.append(f"{self.loop.time():.6f} {kind} {text}")

    def install(self, cluster: SimKopfCluster) -> None:
        """Record the requests (before the cluster's server starts), the changes and the faults of a cluster."""
        cluster.sim.app.middlewares.insert(0, self._middleware())
        cluster.sim.store.observers.append(self._change)
        cluster.sim.faults.log = _Tee(self)
        kopf_logger = logging.getLogger("kopf")
        if _dispatcher not in kopf_logger.handlers:
            kopf_logger.addHandler(_dispatcher)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Route the kopf log records to this trace meanwhile (its run is the one running now)."""
        global _active
        previous, _active = _active, self
        try:
            yield
        finally:
            _active = previous

    def log(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        ref: Any = getattr(record, "k8s_ref", None)
        where = ""
        if isinstance(ref, dict):
            namespace = ref.get("namespace")
            where = f" [{namespace + '/' if namespace else ''}{ref.get('name')}]"
        self.add("log", f"{record.levelname}{where} {record.getMessage()}")

    def _change(self, change: Change) -> None:
        metadata = change.obj.get("metadata") or {}
        group, plural = change.key
        namespace = metadata.get("namespace")
        self.add(
            "change",
            f"{change.type} {plural}{'.' + group if group else ''} "
            f"{namespace + '/' if namespace else ''}{metadata.get('name')} rv={change.rv}",
        )

    def _middleware(self) -> Any:
        @web.middleware
        async def trace_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
            body = (await request.read()).decode("utf-8", "replace") if request.can_read_body else ""
            self.add("request", f"{request.method} {request.path_qs}{' ' + body if body else ''}")
            try:
                response = await handler(request)
            except BaseException as exc:
                self.add("response", f"{type(exc).__name__} {request.method} {request.path}")
                raise
            self.add("response", f"{response.status} {request.method} {request.path}")
            return response

        return trace_requests

    def tail(self, lines: int = 40, width: int = 240) -> list[str]:
        """The last lines, each cut to a readable width."""
        return [line if len(line) <= width else line[: width - 3] + "..." for line in self.lines[-lines:]]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
