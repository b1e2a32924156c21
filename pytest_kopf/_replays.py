"""Record and replay for ``kopf_cluster``: watch-event logs (:mod:`kopf_sim.recording.eventlog`) in both modes.

In sim mode, the simulated cluster's own changes are logged as they commit. In real mode, a
recorder (:mod:`kopf_sim.recording.capture`) lists and watches every resource of the test's namespace
over the kubeconfig's connection, from the test's start to its end. Replays go through the
test's own requests to the cluster (:class:`kopf_sim.recording.replaying.Replay`), so they work in both.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Any

from kopf_sim.recording.apiclient import JSON, Api, HttpApi
from kopf_sim.recording.capture import Capture
from kopf_sim.recording.eventlog import LogWriter
from kopf_sim.timing.clock import system_clock

__all__ = ["Exchange", "RealModeRecorder", "exchange_api"]

#: Real seconds for the last changes of a test to come through the watches before the recording stops.
LAST_EVENTS_GRACE = 0.1

#: One request of ``kopf_cluster``: (method, path, params, body, headers) -> (status, reason, body).
Exchange = Callable[
    [str, str, Mapping[str, str] | None, bytes | None, Mapping[str, str]], Awaitable[tuple[int, str, bytes]]
]


def exchange_api(exchange: Exchange) -> Api:
    """The replayer's requests sent as ``kopf_cluster``'s own (straight into the simulator in sim mode)."""

    async def call(
        method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None, content_type: str = JSON
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if body is not None else {}
        status, _, content = await exchange(method, path, params, data, headers)
        try:
            answer = json.loads(content) if content.strip() else None
        except ValueError:
            answer = content.decode("utf-8", "replace")
        return status, answer

    return call


class RealModeRecorder:
    """Records the test's namespace of a real cluster (every resource there, CRDs applied later included)."""

    def __init__(
        self,
        path: pathlib.Path,
        *,
        server: str,
        ssl_context: ssl.SSLContext | None,
        headers: Callable[[], Mapping[str, str]],
        namespace: str,
    ) -> None:
        self.path = path
        self.namespace = namespace
        self._api = HttpApi(server, ssl_context=ssl_context, headers=headers, user_agent="pytest-kopf-record")
        self._server = server
        self._stream: IO[str] | None = None
        self._capture: Capture | None = None

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._stream = self.path.open("w", encoding="utf-8")
        source = {
            "recorder": "pytest --kopf-record",
            "mode": "real",
            "server": self._server,
            "namespaces": [self.namespace],
        }
        writer = LogWriter(self._stream, started=system_clock(), source=source)
        self._capture = Capture(self._api, writer, all_resources=True, namespaces=[self.namespace])
        await self._capture.start()

    async def stop(self) -> None:
        try:
            if self._capture is not None:
                await asyncio.sleep(LAST_EVENTS_GRACE)
                await self._capture.stop()
                self._capture = None
            await self._api.close()
        finally:
            if self._stream is not None:
                self._stream.close()
                self._stream = None
