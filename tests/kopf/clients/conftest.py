"""
Fixtures for the API clients: the shared simulated cluster (tests/conftest.py) with a permissive Widget CRD,
and a recorder of the requests that the clients send.

What they fake on top of the shared ones: failures, when a test asks for them; the recorder is a middleware
in front of the simulated apiserver that can answer a request with an injected response instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from kopf._cogs.structs.references import Resource

from ..crds import permissive_crd

CRD = permissive_crd("acme.example", "widgets", "widget", "Widget", short_names=("wd",), categories=("acme",))

WIDGETS = Resource("acme.example", "v1", "widgets", kind="Widget", namespaced=True, subresources=frozenset({"status"}))
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)


class Recorder:
    """A middleware that records the requests and can inject faults (by a predicate)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []  # (method, path, query)
        self.headers: list[dict[str, str]] = []
        self.faults: list[tuple[Callable[[web.Request], bool], Callable[[], web.StreamResponse]]] = []

    def fail(
        self,
        times: int,
        response: Callable[[], web.StreamResponse],
        when: Callable[[web.Request], bool] = lambda _: True,
    ) -> None:
        for _ in range(times):
            self.faults.append((when, response))

    @web.middleware
    async def middleware(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        self.requests.append((request.method, request.path, request.query_string))
        self.headers.append(dict(request.headers))
        for idx, (when, response) in enumerate(self.faults):
            if when(request):
                del self.faults[idx]
                return response()
        return await handler(request)

    def paths(self, method: str | None = None) -> list[str]:
        return [path for m, path, _ in self.requests if method is None or m == method]


@pytest.fixture
def crds() -> list[dict[str, Any]]:
    return [CRD]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def app(app: web.Application, recorder: Recorder) -> web.Application:
    app.middlewares.insert(0, recorder.middleware)
    return app


@pytest.fixture
def logger() -> logging.Logger:
    return logging.getLogger("kopf.tests.clients")


def status_response(
    code: int, reason: str = "Failure", headers: dict[str, str] | None = None
) -> Callable[[], web.StreamResponse]:
    def make() -> web.StreamResponse:
        payload = {
            "apiVersion": "v1",
            "kind": "Status",
            "status": "Failure",
            "message": f"injected {code}",
            "reason": reason,
            "code": code,
        }
        return web.json_response(payload, status=code, headers=headers)

    return make
