"""The settings that the published framework (1.45) has besides the documented ones: they take effect here too."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from kopf._cogs.clients import api, events, patching, watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import ObjectReference
from kopf._cogs.structs.credentials import AiohttpSession, Vault
from kopf._cogs.structs.patches import Patch
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import DEFAULT_BASE_URL, InMemoryServer
from tests.helpers import widget

from .conftest import WIDGETS, Recorder, status_response

MERGE = "application/merge-patch+json"


async def _watch_names(vault: Vault, settings: OperatorSettings) -> list[str]:
    names: list[str] = []
    stop = asyncio.Event()
    async for event in watching.continuous_watch(
        resource=WIDGETS, namespace="default", settings=settings, vault=vault, stop=stop, markers=True
    ):
        if event is watching.Bookmark.LISTED:
            break
        assert not isinstance(event, watching.Bookmark)
        names.append(event["object"]["metadata"]["name"])
    return names


@pytest.mark.parametrize("key", ["widgets", "acme.example/widgets", "Widget"])
async def test_label_selectors_per_resource(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder, key: str
) -> None:
    rtype = cluster.resource("acme.example", "v1", "widgets")
    cluster.create(rtype, "default", {**widget("a"), "metadata": {"name": "a", "labels": {"app": "x"}}})
    cluster.create(rtype, "default", widget("b"))
    settings.watching.label_selectors[key] = "app=x"
    assert await _watch_names(vault, settings) == ["a"]
    assert any("labelSelector=app%3Dx" in query for _, _, query in recorder.requests)


async def test_field_selectors_and_chunk_size(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    rtype = cluster.resource("acme.example", "v1", "widgets")
    for name in "abc":
        cluster.create(rtype, "default", widget(name))
    settings.watching.field_selectors["acme.example", "widgets"] = "metadata.name!=b"
    settings.watching.chunk_size = 1
    assert await _watch_names(vault, settings) == ["a", "c"]
    lists = [query for method, _, query in recorder.requests if method == "GET" and "watch" not in query]
    assert len(lists) >= 2 and all("limit=1" in query for query in lists)  # paged by the chunk size


async def test_unsupported_watching_settings_are_warned_about(
    vault: Vault, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    settings.watching.initial_streaming = True
    settings.watching.shard_selectors["widgets"] = "x"
    await _watch_names(vault, settings)
    assert "initial_streaming is not supported" in caplog.text
    assert "shard_selectors are not supported" in caplog.text


async def test_events_named_and_attributed_per_settings(
    cluster: Cluster, vault: Vault, settings: OperatorSettings
) -> None:
    settings.posting.event_name_prefix = "my-op-"
    settings.posting.reporting_component = "my-operator"
    settings.posting.reporting_instance = "pod-1"
    ref = ObjectReference(apiVersion="acme.example/v1", kind="Widget", namespace="default", name="a", uid="u")
    await events.post_event(ref=ref, type="Normal", reason="R", message="m", settings=settings, vault=vault)
    [event] = cluster.objects(cluster.resource("", "v1", "events").storage_key, "default")
    assert event["metadata"]["name"].startswith("my-op-")
    assert event["reportingComponent"] == event["source"]["component"] == "my-operator"
    assert event["reportingInstance"] == "pod-1"


@pytest.mark.looptime
async def test_event_posting_is_retried_with_its_backoffs(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    settings.networking.error_backoffs = []  # no retries of the API layer: only the posting's own ones
    recorder.fail(2, status_response(503), when=lambda request: request.method == "POST")
    ref = ObjectReference(apiVersion="acme.example/v1", kind="Widget", namespace="default", name="a", uid="u")
    start = asyncio.get_running_loop().time()
    await events.post_event(
        ref=ref, type="Normal", reason="R", message="m", settings=settings, vault=vault, backoffs=[3, 4]
    )
    assert asyncio.get_running_loop().time() - start == pytest.approx(7)
    assert len(list(cluster.objects(cluster.resource("", "v1", "events").storage_key, "default"))) == 1


@pytest.mark.looptime
async def test_enforced_retry_after_for_5xx(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    recorder.fail(1, status_response(503, headers={"Retry-After": "9"}))
    settings.networking.enforce_retry_after = True
    start = asyncio.get_running_loop().time()
    await api.get(f"{DEFAULT_BASE_URL}/api/v1/namespaces/default", settings=settings, vault=vault)
    assert asyncio.get_running_loop().time() - start == pytest.approx(9)


@pytest.mark.looptime
async def test_unenforced_retry_after_for_5xx(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    recorder.fail(1, status_response(503, headers={"Retry-After": "9"}))
    start = asyncio.get_running_loop().time()
    await api.get(f"{DEFAULT_BASE_URL}/api/v1/namespaces/default", settings=settings, vault=vault)
    assert asyncio.get_running_loop().time() - start == pytest.approx(1)  # the own back-off


async def test_patch_fns_remove_one_list_item_as_a_guarded_json_patch(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    rtype = cluster.resource("acme.example", "v1", "widgets")
    cluster.create(rtype, "default", widget("a", items=["x", "y", "z"]))

    def drop_y(body: Any) -> None:
        body["spec"]["items"].remove("y")

    patch = Patch({"spec": {"size": 5}}, fns=[drop_y])
    assert patch and repr(patch).startswith("{'spec': {'size': 5}} + fns=")
    result = await patching.patch_obj(
        resource=WIDGETS, namespace="default", name="a", patch=patch, settings=settings, vault=vault
    )
    assert result is not None
    assert result["spec"] == {"items": ["x", "z"], "size": 5}
    assert recorder.paths("PATCH") == ["/apis/acme.example/v1/namespaces/default/widgets/a"] * 2


async def test_patch_fns_alone_make_a_patch_truthy() -> None:
    assert not Patch()
    assert Patch(fns=[lambda body: None])


async def test_aiohttp_session_credentials_are_used_as_they_are(
    server: InMemoryServer, settings: OperatorSettings, recorder: Recorder
) -> None:
    session = aiohttp.ClientSession(connector=server.connector(), headers={"X-Own": "yes"})
    try:
        info = AiohttpSession(server=DEFAULT_BASE_URL, aiohttp_session=session)
        async with Vault({"own": info}) as vault:
            rsp = await api.get(f"{DEFAULT_BASE_URL}/api/v1/namespaces/default", settings=settings, vault=vault)
        assert rsp["metadata"]["name"] == "default"
        assert recorder.headers[-1].get("X-Own") == "yes"
        assert not session.closed  # the creator's session: never closed by the framework
    finally:
        await session.close()


def test_trust_env_reaches_the_sessions(settings: OperatorSettings) -> None:
    from kopf._cogs.clients import auth
    from kopf._cogs.structs.credentials import ConnectionInfo

    async def make() -> tuple[bool, bool, bool]:
        sessions = [
            auth.make_session(ConnectionInfo(server="http://h"), trust_env=False),
            auth.make_session(ConnectionInfo(server="http://h"), trust_env=True),
            auth.make_session(ConnectionInfo(server="http://h", trust_env=True)),
        ]
        try:
            return tuple(session.trust_env for session in sessions)  # type: ignore[return-value]
        finally:
            for session in sessions:
                await session.close()

    assert asyncio.run(make()) == (False, True, True)
