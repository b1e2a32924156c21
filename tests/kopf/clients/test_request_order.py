"""Under load, the API requests get their slots by the order of their objects' start; the events go last."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

import kopf
from kopf._cogs.clients import api, auth, events, fetching
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf._cogs.structs.references import Resource
from kopf._core.engines import posting


async def test_waiting_requests_are_served_by_their_order_and_the_background_ones_last(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "MAX_CONCURRENT_REQUESTS", 1)
    served: list[str] = []
    holding = asyncio.Event()
    release = asyncio.Event()

    async def hold(info: ConnectionInfo, session: aiohttp.ClientSession) -> None:
        holding.set()
        await release.wait()

    async def request(name: str, order: int | None) -> None:
        async def record(info: ConnectionInfo, session: aiohttp.ClientSession) -> None:
            served.append(name)

        auth.request_order.set(order)  # (in this task's own context)
        await auth.authenticated(record, vault=vault)

    holder = asyncio.create_task(auth.authenticated(hold, vault=vault))
    await holding.wait()
    early = auth.next_order()  # an object whose processing began before the requests below were made
    waiting = [
        asyncio.create_task(request("event", auth.BACKGROUND_ORDER)),
        asyncio.create_task(request("no order (numbered when made)", None)),
    ]
    await asyncio.sleep(0.1)
    late = auth.next_order()  # one that began after those
    waiting += [
        asyncio.create_task(request("late object", late)),
        asyncio.create_task(request("early object", early)),
        asyncio.create_task(request("second event", auth.BACKGROUND_ORDER)),
    ]
    await asyncio.sleep(0.1)
    assert served == []
    release.set()
    await asyncio.gather(holder, *waiting)
    assert served == ["early object", "no order (numbered when made)", "late object", "event", "second event"]


async def test_the_poster_posts_in_the_background_order(monkeypatch: pytest.MonkeyPatch) -> None:
    orders: list[int | None] = []
    posted = asyncio.Event()

    async def post_event(**_: Any) -> None:
        orders.append(auth.request_order.get())
        posted.set()

    monkeypatch.setattr(events, "post_event", post_event)
    event_queue = posting.make_event_queue()
    poster = asyncio.create_task(posting.poster(event_queue=event_queue, settings=kopf.OperatorSettings()))
    token = posting.event_queue_var.set(event_queue)
    try:
        kopf.event(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"}},
            type="Normal",
            reason="Test",
            message="posted",
        )
        await posted.wait()
    finally:
        posting.event_queue_var.reset(token)
        poster.cancel()
        await asyncio.gather(poster, return_exceptions=True)
    assert orders == [auth.BACKGROUND_ORDER]
    assert auth.request_order.get() is None  # the poster's order stays in its own task


async def test_the_listing_chunks_go_before_the_objects_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    orders: list[int | None] = []
    tokens = ["c1", "c2", None]

    async def get(url: str, **_: Any) -> dict[str, Any]:
        orders.append(auth.request_order.get())
        token = tokens.pop(0)
        return {"items": [], "metadata": {"resourceVersion": "1", **({"continue": token} if token else {})}}

    monkeypatch.setattr(api, "get", get)
    resource = Resource("kopf.dev", "v1", "kopfexamples", namespaced=True)
    object_order = auth.next_order()
    auth.request_order.set(object_order)  # e.g. a caller that is an object's work (in this test's own context)
    pages = [
        page async for page in fetching.list_pages(resource=resource, namespace="ns", settings=kopf.OperatorSettings())
    ]
    assert len(pages) == 3
    assert orders == [auth.LISTING_ORDER] * 3
    assert object_order > auth.LISTING_ORDER
    assert auth.request_order.get() == object_order  # restored between and after the chunks
