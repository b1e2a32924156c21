"""A real headless Chromium for the tests, driven over the DevTools protocol (aiohttp's websocket client).

The reports' pages are meant for people's browsers: these tests load them in one, with its layout, styles and
scripts, and look at what it shows. Chromium comes from the system's packages (CI installs them); where there is
none, the tests that need it are skipped with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

#: Where the system's packages put the browser (Debian: chromium; others: chromium-browser, google-chrome).
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: How long the browser may take to start, and a page to load (real seconds: the browser is a real process).
TIMEOUT = 60.0
#: The flags of a quiet headless run on a machine without a network or a screen.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


def executable() -> str | None:
    """The browser's path, or None where the system has none."""
    override = os.environ.get("KOPF_TEST_CHROMIUM")
    if override:
        return override
    return next((path for path in map(shutil.which, CANDIDATES) if path), None)


class BrowserError(RuntimeError):
    """The browser did not start, or a page's script failed."""


class Page:
    """One tab: navigate, evaluate JavaScript, move the mouse, take a screenshot; script errors are collected."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._loaded = asyncio.Event()
        self.errors: list[str] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._socket:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._replies:
                self._replies.pop(data["id"]).set_result(data)
            elif data.get("method") == "Page.loadEventFired":
                self._loaded.set()
            elif data.get("method") == "Runtime.exceptionThrown":
                details = data["params"]["exceptionDetails"]
                self.errors.append(details.get("exception", {}).get("description") or details.get("text", "?"))

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        reply = self._replies[ident] = asyncio.get_running_loop().create_future()
        await self._socket.send_json({"id": ident, "method": method, "params": params})
        data = await asyncio.wait_for(reply, TIMEOUT)
        if "error" in data:
            raise BrowserError(f"{method} failed: {data['error']}")
        return dict(data.get("result", {}))

    async def open(self, url: str) -> None:
        """Load the page (e.g. ``path.resolve().as_uri()``) and wait for its load event."""
        await self.send("Page.enable")
        await self.send("Runtime.enable")
        self._loaded.clear()
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(self._loaded.wait(), TIMEOUT)

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def hover(self, selector: str) -> None:
        """Move the mouse over the middle of the element, as a person would (the page sees real mouse events)."""
        box = await self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        x, y = box
        await self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    async def screenshot(self) -> bytes:
        """The visible part of the page as a PNG image."""
        data = await self.send("Page.captureScreenshot", format="png")
        return base64.b64decode(data["data"])

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


@contextlib.asynccontextmanager
async def browser_page(chromium: str) -> AsyncIterator[Page]:
    """A fresh headless browser (its own empty profile) with one tab; all of it is gone afterwards."""
    with tempfile.TemporaryDirectory(prefix="kopf-chromium-") as profile:
        process = await asyncio.create_subprocess_exec(
            chromium,
            *FLAGS,
            f"--user-data-dir={profile}",
            "about:blank",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            endpoint = await asyncio.wait_for(_listening(process), TIMEOUT)
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://{endpoint}/json/list") as response:
                    targets = await response.json()
                url = next(target["webSocketDebuggerUrl"] for target in targets if target["type"] == "page")
                async with session.ws_connect(url, max_msg_size=0) as socket:
                    page = Page(socket)
                    try:
                        yield page
                    finally:
                        await page.close()
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def _listening(process: asyncio.subprocess.Process) -> str:
    """The browser's DevTools endpoint (host:port), as it prints it once it listens."""
    assert process.stderr is not None
    seen: list[str] = []
    while line := (await process.stderr.readline()).decode(errors="replace"):
        seen.append(line.rstrip())
        match = re.search(r"DevTools listening on ws://([^/\s]+)/", line)
        if match:
            return match.group(1)
    raise BrowserError("The browser has exited before it listened:\n" + "\n".join(seen[-20:]))
