"""An event loop in a thread of its own: how synchronous tests (hypothesis) drive an asynchronous server."""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Any, Self


class LoopThread:
    """Runs coroutines in its own loop; entering starts the loop and :meth:`_start`, exiting undoes both."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        self.run(self._start())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.run(self._stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
            self.loop.close()

    def run(self, coro: Any, timeout: float = 60) -> Any:
        """Run a coroutine in the loop's thread and wait for its result here."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> None:
        """What to start in the loop (servers, sessions)."""

    async def _stop(self) -> None:
        """What to stop in the loop before it stops."""
