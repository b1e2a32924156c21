"""Hostile and careless admission reviews against kopf's webhook server with real handlers: never a 5xx.

A malformed review is a 4xx ``kind: Status``; a well-formed one is answered with a review's response
(allowed, or denied when a handler cannot process it); nothing costs the server a second of CPU.
A bounded profile runs in CI; ``benchmarks/fuzz_sim.py`` runs more.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import reviews
from kopf._cogs.structs.references import Resource
from kopf._core.engines import admission
from kopf._core.intents.registries import OperatorRegistry
from kopf._kits.webhooks import WebhookServer

from ..loop_thread import LoopThread

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
UID = "f0e1d2c3-0000-4000-8000-000000000000"
REVIEW: dict[str, Any] = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": UID,
        "kind": {"group": "kopf.dev", "version": "v1", "kind": "KopfExample"},
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "name": "kex1",
        "namespace": "default",
        "operation": "UPDATE",
        "userInfo": {"username": "admin", "uid": "admin", "groups": ["system:masters"]},
        "object": {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "kex1", "namespace": "default", "labels": {"a": "b"}},
            "spec": {"field": "value", "items": [1, 2]},
        },
        "oldObject": {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "kex1", "namespace": "default"},
            "spec": {"field": "old"},
        },
        "dryRun": False,
    },
}


@dataclasses.dataclass(frozen=True)
class RawRequest:
    body: bytes
    path: str = "/"
    method: str = "POST"
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)

    def describe(self) -> str:
        return f"{self.method} {self.path} {dict(self.headers)} {self.body[:300]!r}"


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: int
    content_type: str
    body: bytes
    cpu_seconds: float


def make_registry() -> OperatorRegistry:
    registry = OperatorRegistry()

    @kopf.on.validate("kopf.dev", "v1", "kopfexamples", id="check", registry=registry)
    def check(spec: Any, **_: Any) -> None:
        if spec.get("deny"):
            raise kopf.AdmissionError("Denied on request.", code=400)
        _ = len(str(spec.get("field")))  # reads the body as operators do

    @kopf.on.validate("kopf.dev", "v1", "kopfexamples", id="labels", field="metadata.labels", registry=registry)
    def labels(new: Any, **_: Any) -> None:
        if isinstance(new, dict) and "forbidden" in new:
            raise kopf.AdmissionError("No forbidden labels.")

    @kopf.on.mutate("kopf.dev", "v1", "kopfexamples", id="mutate", registry=registry)
    def mutate(patch: Any, spec: Any, **_: Any) -> None:
        patch.spec["seen"] = bool(spec)

    return registry


class ServedWebhooks(LoopThread):
    """kopf's webhook server on 127.0.0.1 (plain HTTP) with the framework's callback, in a thread's loop."""

    def __init__(self) -> None:
        super().__init__("served-webhooks")
        self.server = WebhookServer(addr="127.0.0.1", port=0, insecure=True)
        settings = OperatorSettings()
        self.fn = functools.partial(
            admission.serve_admission_request, registry=make_registry(), settings=settings, resources=[KEX]
        )
        self.configs: AsyncIterator[reviews.WebhookClientConfig] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.url = ""
        self.requests = 0

    async def _start(self) -> None:
        self.configs = self.server(self.fn)
        config = await anext(self.configs)
        self.url = str(config.get("url"))
        self.session = aiohttp.ClientSession(auto_decompress=False)

    async def _stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        await self.server.__aexit__(None, None, None)

    def send(self, request: RawRequest) -> Outcome:
        self.requests += 1
        return self.run(self._send(request))

    async def _send(self, request: RawRequest) -> Outcome:
        assert self.session is not None
        started = time.thread_time()
        async with self.session.request(
            request.method, f"{self.url}{request.path}", data=request.body, headers=dict(request.headers)
        ) as response:
            body = await response.read()
            content_type = response.headers.get("Content-Type", "")
        return Outcome(response.status, content_type, body, time.thread_time() - started)


def check_review_outcome(request: RawRequest, outcome: Outcome) -> None:
    what = request.describe()
    assert outcome.status < 500, f"{outcome.status} for {what}: {outcome.body[:500]!r}"
    assert outcome.cpu_seconds < 1.0, f"{outcome.cpu_seconds:.2f}s of CPU for {what}"
    assert outcome.content_type.startswith("application/json"), f"{outcome.content_type} for {what}"
    answer = json.loads(outcome.body)
    if outcome.status >= 400:
        assert answer["kind"] == "Status" and answer["code"] == outcome.status, f"{answer} for {what}"
    else:
        assert answer["kind"] == "AdmissionReview", f"{answer} for {what}"
        assert isinstance(answer["response"]["allowed"], bool)
        assert answer["response"]["uid"] == json.loads(request.body)["request"]["uid"]  # bodies are taken as sent


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=10,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


@st.composite
def reviews_requests(draw: st.DrawFn) -> RawRequest:
    kind = draw(st.sampled_from(["broken", "broken", "valid", "random", "raw", "hostile"]))
    if kind in ("valid", "broken"):
        review = json.loads(json.dumps(REVIEW))
        review["request"]["operation"] = draw(st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]))
        if kind == "broken":
            path = draw(st.sampled_from(_paths(review)[1:]))
            target = review
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = draw(json_values)
        body = json.dumps(review).encode()
    elif kind == "random":
        body = json.dumps(draw(json_values)).encode()
    elif kind == "raw":
        body = draw(st.binary(max_size=200))
    else:
        body = draw(
            st.sampled_from(
                [
                    b"[" * 100_000,
                    b'{"a":' * 5000,
                    b'{"kind": NaN}',
                    b"",
                    json.dumps({**REVIEW, "request": {**REVIEW["request"], "resource": "x"}}).encode(),
                    json.dumps({**REVIEW, "request": {**REVIEW["request"], "object": {"spec": "x"}}}).encode(),
                ]
            )
        )
    headers = [("Content-Type", "application/json")]
    if draw(st.integers(min_value=0, max_value=7)) == 0:
        headers.append(("Content-Encoding", "gzip"))
        body = gzip.compress(body) if draw(st.booleans()) else body
    path = draw(st.sampled_from(["/", "/check", "/labels", "/mutate", "/unknown", "/a/b"]))
    return RawRequest(body, path, "POST", tuple(headers))


HAND_WRITTEN = [
    RawRequest(json.dumps({**REVIEW, "request": {**REVIEW["request"], "resource": "kopfexamples"}}).encode()),
    RawRequest(b"[" * 100_000 + b"]" * 100_000),
    RawRequest(b"not gzip", headers=(("Content-Encoding", "gzip"),)),
    RawRequest(
        json.dumps({**REVIEW, "request": {**REVIEW["request"], "object": {"metadata": "x", "spec": 5}}}).encode()
    ),
    RawRequest(json.dumps({**REVIEW, "request": {**REVIEW["request"], "userInfo": {"groups": "x"}}}).encode()),
    RawRequest(json.dumps(REVIEW).encode(), path="/check"),
]


@pytest.fixture(scope="module")
def hooks() -> ServedWebhooks:  # type: ignore[misc]
    with ServedWebhooks() as served:
        yield served


@pytest.mark.parametrize("request_", HAND_WRITTEN, ids=lambda r: r.describe()[:50])
def test_hand_written_reviews(hooks: ServedWebhooks, request_: RawRequest) -> None:
    check_review_outcome(request_, hooks.send(request_))


def test_a_string_resource_is_a_malformed_review(hooks: ServedWebhooks) -> None:
    outcome = hooks.send(HAND_WRITTEN[0])
    assert outcome.status == 422
    assert "request.resource" in json.loads(outcome.body)["message"]


def test_a_valid_review_is_served_by_the_handlers(hooks: ServedWebhooks) -> None:
    outcome = hooks.send(HAND_WRITTEN[-1])
    assert outcome.status == 200
    assert json.loads(outcome.body)["response"]["allowed"] is True


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(request_=reviews_requests())
def test_any_review_is_answered_within_bounds(hooks: ServedWebhooks, request_: RawRequest) -> None:
    check_review_outcome(request_, hooks.send(request_))
