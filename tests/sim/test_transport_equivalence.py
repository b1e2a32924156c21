"""The in-memory transport and a real socket give the same answers to the same requests, byte for byte.

Two clusters start from the same virtual time and the same seeded uids; one is driven through
:class:`InMemoryServer` sessions, the other through a plain aiohttp session to :class:`ServedApp`
on 127.0.0.1, both in this test's event loop. A script of requests (discovery, writes of all kinds,
lists in pages, errors, a watch stream) runs against each of them, and the transcripts must be equal:
status codes, all response headers but ``Date``, and the bodies (a watch's whole stream).

The only normalized field is ``serverAddressByClientCIDRs[].serverAddress`` of ``/api``: the apiserver
puts the address by which the client reached it there, which differs between the two transports.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import InMemoryServer
from kopf_sim.transports.serving import ServedApp

START = datetime.datetime(2026, 3, 4, 5, 6, 7, tzinfo=datetime.UTC)
SEED = 20260304
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
CM = "/api/v1/namespaces/ns1/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/ns1/widgets"

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]},
        },
    },
}


@dataclasses.dataclass(frozen=True)
class Exchange:
    request: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Send = Callable[..., Awaitable[Exchange]]


def recorder(session: aiohttp.ClientSession, base: str, clock: ManualClock, transcript: list[Exchange]) -> Send:
    async def send(
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: str | bytes | None = None,
        content_type: str | None = None,
        accept: str | None = None,
        params: dict[str, str] | None = None,
    ) -> Exchange:
        headers = {}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if accept is not None:
            headers["Accept"] = accept
        if json_body is not None:
            data = json.dumps(json_body)
            headers.setdefault("Content-Type", "application/json")
        async with session.request(method, base + path, data=data, headers=headers, params=params) as resp:
            body = await resp.read()
            exchange = Exchange(
                f"{method} {path} {params or ''}",
                resp.status,
                tuple((k, v) for k, v in resp.headers.items() if k != "Date"),
                body,
            )
        transcript.append(exchange)
        clock.advance(7)  # the same virtual time passes between requests on both sides
        return exchange

    return send


async def script(send: Send) -> None:
    # Discovery.
    await send("GET", "/version")
    await send("GET", "/api")
    await send("GET", "/apis")
    await send("GET", "/api/v1")
    await send("GET", "/apis/apps/v1")

    # Creations, reads, lists in pages and with selectors.
    await send("POST", "/api/v1/namespaces", json_body={"metadata": {"name": "ns1"}})
    first = await send(
        "POST", CM, json_body={"metadata": {"name": "cm-a", "labels": {"tier": "web"}}, "data": {"k": "v"}}
    )
    watch_from = first.json()["metadata"]["resourceVersion"]
    for name, tier in [("cm-b", "db"), ("cm-c", "web"), ("cm-d", "db")]:
        await send("POST", CM, json_body={"metadata": {"name": name, "labels": {"tier": tier}}})
    await send("GET", f"{CM}/cm-a")
    page = await send("GET", CM, params={"limit": "3"})
    await send("POST", CM, json_body={"metadata": {"name": "cm-0-late"}})  # invisible in the next page
    await send("GET", CM, params={"limit": "3", "continue": page.json()["metadata"]["continue"]})
    await send("GET", CM, params={"labelSelector": "tier=web"})
    await send("GET", "/api/v1/configmaps", params={"labelSelector": "tier!=web", "fieldSelector": "metadata.name!=x"})
    await send("GET", CM, accept=TABLE)

    # Patches of all types, an update, a stale update.
    await send("PATCH", f"{CM}/cm-a", data='{"data": {"m": "merge"}}', content_type="application/merge-patch+json")
    await send(
        "PATCH",
        f"{CM}/cm-a",
        data='[{"op": "add", "path": "/data/j", "value": "json"}]',
        content_type="application/json-patch+json",
    )
    await send(
        "PATCH",
        f"{CM}/cm-a",
        data='{"data": {"s": "strategic"}}',
        content_type="application/strategic-merge-patch+json",
    )
    await send(
        "PATCH",
        f"{CM}/cm-b",
        params={"fieldManager": "tester"},
        data="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-b\ndata:\n  a: applied\n",
        content_type="application/apply-patch+yaml",
    )
    current = await send("GET", f"{CM}/cm-a")
    stale = current.json()
    await send("PUT", f"{CM}/cm-a", json_body={**stale, "data": {"only": "this"}})
    await send("PUT", f"{CM}/cm-a", json_body={**stale, "data": {"stale": "write"}})

    # A deployment: its status and scale subresources.
    await send("POST", "/apis/apps/v1/namespaces/ns1/deployments", json_body=DEPLOYMENT)
    await send(
        "PATCH",
        "/apis/apps/v1/namespaces/ns1/deployments/web/status",
        data='{"status": {"replicas": 1, "readyReplicas": 1}}',
        content_type="application/merge-patch+json",
    )
    await send(
        "PATCH",
        "/apis/apps/v1/namespaces/ns1/deployments/web/scale",
        data='{"spec": {"replicas": 3}}',
        content_type="application/merge-patch+json",
    )
    await send("GET", "/apis/apps/v1/namespaces/ns1/deployments/web")

    # A CRD and a custom object with a finalizer: deletion, then the finalizer's removal.
    await send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json_body=CRD)
    await send("GET", "/apis/example.com/v1")
    await send(
        "POST",
        WIDGETS,
        json_body={
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "finalizers": ["example.com/hold"]},
            "spec": {"size": 2},
        },
    )
    await send(
        "PATCH",
        f"{WIDGETS}/w1/status",
        data='{"status": {"phase": "Ready"}}',
        content_type="application/merge-patch+json",
    )
    await send("DELETE", f"{WIDGETS}/w1")
    await send(
        "PATCH", f"{WIDGETS}/w1", data='{"metadata": {"finalizers": null}}', content_type="application/merge-patch+json"
    )
    await send(
        "DELETE",
        f"{CM}/cm-c",
        json_body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
    )

    # Errors: 404, 409, 422, 400, 415, 405.
    await send("GET", f"{WIDGETS}/w1")
    await send("GET", "/api/v1/nowhere")
    await send("POST", CM, json_body={"metadata": {"name": "cm-a"}})
    await send("POST", CM, json_body={"metadata": {"name": "Not_Valid"}})
    await send(
        "POST",
        WIDGETS,
        json_body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2"}, "spec": {"size": 0}},
    )
    await send("POST", CM, data="{not json", content_type="application/json")
    await send("PATCH", f"{CM}/cm-a", data='{"data": {}}', content_type="text/plain")
    await send("GET", CM, params={"limit": "x"})
    await send("PUT", CM, json_body={})

    # The namespace's deletion (its contents go with it), then a watch replaying all of that history.
    await send("DELETE", "/api/v1/namespaces/ns1")
    await send("GET", "/api/v1/namespaces/ns1")
    await send(
        "GET", "/api/v1/configmaps", params={"watch": "true", "resourceVersion": watch_from, "timeoutSeconds": "3"}
    )
    await send(
        "GET",
        "/apis/example.com/v1/widgets",
        params={"watch": "1", "resourceVersion": "1", "timeoutSeconds": "2", "allowWatchBookmarks": "true"},
    )


def normalized(exchange: Exchange) -> Exchange:
    """Only ``/api``'s serverAddressByClientCIDRs differ: the address as the client reached the server.

    (And so does that one response's Content-Length, which counts the address's characters.)
    """
    if exchange.request.startswith("GET /api "):
        data = exchange.json()
        for entry in data["serverAddressByClientCIDRs"]:
            entry["serverAddress"] = "<normalized>"
        headers = tuple((k, v) for k, v in exchange.headers if k != "Content-Length")
        return dataclasses.replace(exchange, headers=headers, body=json.dumps(data).encode())
    return exchange


@pytest.mark.looptime
async def test_in_memory_and_served_transports_answer_identically() -> None:
    clocks = ManualClock(START), ManualClock(START)
    memory_cluster = Cluster(clock=clocks[0], uids=SeededUids(SEED))
    served_cluster = Cluster(clock=clocks[1], uids=SeededUids(SEED))

    in_memory: list[Exchange] = []
    async with InMemoryServer(build_app(memory_cluster)) as server, server.session() as session:
        await script(recorder(session, "", clocks[0], in_memory))

    over_tcp: list[Exchange] = []
    async with ServedApp(build_app(served_cluster), host="127.0.0.1") as served, aiohttp.ClientSession() as session:
        await script(recorder(session, served.url, clocks[1], over_tcp))

    assert len(in_memory) == len(over_tcp) >= 40
    for memory_exchange, tcp_exchange in zip(in_memory, over_tcp, strict=True):
        assert normalized(memory_exchange) == normalized(tcp_exchange)

    # The script did reach every kind of answer, so that the equality means something.
    statuses = {exchange.status for exchange in in_memory}
    assert statuses >= {200, 201, 400, 404, 405, 409, 415, 422}
    served_address = json.loads(over_tcp[1].body)["serverAddressByClientCIDRs"][0]["serverAddress"]
    assert served_address == served.url.removeprefix("http://")
    watch = [json.loads(line) for line in in_memory[-2].body.splitlines()]
    assert watch[0]["type"] == "ADDED"
    assert watch[-1]["type"] == "DELETED"
    assert {event["type"] for event in watch} == {"ADDED", "MODIFIED", "DELETED"}
    assert len(watch) > 10
    assert memory_cluster.rv == served_cluster.rv
