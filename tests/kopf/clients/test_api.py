import asyncio
import base64
import importlib.metadata
import logging
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web

from kopf._cogs.clients import api, auth, errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import AccessError, ConnectionInfo, LoginError, Vault
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import DEFAULT_BASE_URL, InMemoryServer
from kopf_sim.transports.serving import bearer_token_middleware

from .conftest import Recorder, status_response

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
NS_URL = "/api/v1/namespaces/default"


async def test_get_through_the_vault(vault: Vault, settings: OperatorSettings) -> None:
    rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["kind"] == "Namespace" and rsp["metadata"]["name"] == "default"


async def test_vault_from_the_context(vault: Vault, settings: OperatorSettings) -> None:
    token = auth.vault_var.set(vault)
    try:
        rsp = await api.get(NS_URL, settings=settings)
    finally:
        auth.vault_var.reset(token)
    assert rsp["metadata"]["name"] == "default"


async def test_no_vault_at_all(settings: OperatorSettings) -> None:
    with pytest.raises(RuntimeError, match="vault"):
        await api.get(NS_URL, settings=settings)


async def test_client_errors_are_not_retried(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    with pytest.raises(errors.APINotFoundError) as e:
        await api.get("/api/v1/namespaces/nonexistent", settings=settings, vault=vault)
    assert e.value.status == 404 and e.value.code == 404 and e.value.reason == "NotFound"
    assert isinstance(e.value, errors.APIClientError)
    assert len(recorder.requests) == 1


@pytest.mark.looptime
async def test_server_errors_are_retried_with_backoffs(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    recorder.fail(3, status_response(503, "ServiceUnavailable"))
    loop = asyncio.get_running_loop()
    start = loop.time()
    rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"
    assert loop.time() - start == pytest.approx(1 + 2 + 3)
    assert len(recorder.requests) == 4


@pytest.mark.looptime
async def test_server_errors_escalate_after_the_backoffs(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    recorder.fail(4, status_response(500, "InternalError"))
    with pytest.raises(errors.APIServerError) as e:
        await api.get(NS_URL, settings=settings, vault=vault)
    assert e.value.status == 500 and e.value.message == "injected 500"
    assert len(recorder.requests) == 4


async def test_no_retries_when_backoffs_are_empty(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    settings.networking.error_backoffs = []
    recorder.fail(1, status_response(502))
    with pytest.raises(errors.APIServerError):
        await api.get(NS_URL, settings=settings, vault=vault)
    assert len(recorder.requests) == 1


@pytest.mark.looptime
async def test_too_many_requests_honour_retry_after(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    recorder.fail(2, status_response(429, "TooManyRequests", headers={"Retry-After": "7"}))
    loop = asyncio.get_running_loop()
    start = loop.time()
    rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"
    assert loop.time() - start == pytest.approx(14)
    assert len(recorder.requests) == 3


@pytest.mark.looptime
async def test_connection_errors_are_retried(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    def drop() -> web.StreamResponse:
        raise ConnectionResetError("injected disconnect")

    recorder.fail(1, drop)
    rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"
    assert len(recorder.requests) == 2


@pytest.mark.looptime
async def test_request_timeout_is_retried(settings: OperatorSettings) -> None:
    settings.networking.request_timeout = 10
    calls = 0

    @web.middleware
    async def stuck(request: web.Request, handler: Handler) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.Event().wait()  # hang forever (in virtual time)
        return await handler(request)

    cluster = Cluster()
    app = build_app(cluster)
    app.middlewares.insert(0, stuck)
    async with InMemoryServer(app) as server:
        info = ConnectionInfo(DEFAULT_BASE_URL).with_connector_factory(server.connector)
        async with Vault({"x": info}) as own_vault:
            loop = asyncio.get_running_loop()
            start = loop.time()
            rsp = await api.get(NS_URL, settings=settings, vault=own_vault)
            assert loop.time() - start == pytest.approx(10 + 1, abs=0.5)
    assert rsp["metadata"]["name"] == "default"
    assert calls == 2


@pytest.mark.looptime
@pytest.mark.parametrize("request_timeout", [0, None])
async def test_no_request_timeout_is_no_limit(
    vault: Vault, settings: OperatorSettings, request_timeout: float | None
) -> None:
    settings.networking.request_timeout = request_timeout
    rsp = await api.get(NS_URL, settings=settings, vault=vault)
    assert rsp["metadata"]["name"] == "default"


async def test_post_patch_delete(vault: Vault, settings: OperatorSettings) -> None:
    url = "/api/v1/namespaces/default/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}}
    created = await api.post(url, payload=body, settings=settings, vault=vault)
    assert created["data"] == {"a": "1"}
    patched = await api.patch(f"{url}/cm", payload={"data": {"b": "2", "a": None}}, settings=settings, vault=vault)
    assert patched["data"] == {"b": "2"}
    await api.delete(f"{url}/cm", settings=settings, vault=vault)
    with pytest.raises(errors.APINotFoundError):
        await api.get(f"{url}/cm", settings=settings, vault=vault)


def token_app(cluster: Cluster, token: str) -> web.Application:
    app = build_app(cluster)
    app.middlewares.append(bearer_token_middleware(token))
    return app


async def test_401_invalidates_and_uses_the_next_credentials(
    cluster: Cluster, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with InMemoryServer(token_app(cluster, "good")) as server:
        bad = ConnectionInfo(DEFAULT_BASE_URL, token="bad-secret", priority=1).with_connector_factory(server.connector)
        good = ConnectionInfo(DEFAULT_BASE_URL, token="good").with_connector_factory(server.connector)
        async with Vault({"bad": bad, "good": good}) as vault:
            rsp = await api.get(NS_URL, settings=settings, vault=vault)
            assert rsp["metadata"]["name"] == "default"
            assert list(vault.keys()) == ["good"]
    assert "bad-secret" not in caplog.text
    assert "'bad'" in caplog.text


async def test_401_depletion_waits_for_a_relogin(cluster: Cluster, settings: OperatorSettings) -> None:
    async with InMemoryServer(token_app(cluster, "fresh")) as server:
        stale = ConnectionInfo(DEFAULT_BASE_URL, token="stale").with_connector_factory(server.connector)
        async with Vault({"login": stale}) as vault:
            task = asyncio.create_task(api.get(NS_URL, settings=settings, vault=vault))
            await vault.wait_for_emptiness()  # what the login activity would do
            assert not task.done()
            fresh = ConnectionInfo(DEFAULT_BASE_URL, token="fresh").with_connector_factory(server.connector)
            await vault.populate({"login": fresh})
            rsp = await task
            assert rsp["metadata"]["name"] == "default"


async def test_401_with_no_new_credentials_fails(cluster: Cluster, settings: OperatorSettings) -> None:
    async with InMemoryServer(token_app(cluster, "fresh")) as server:
        stale = ConnectionInfo(DEFAULT_BASE_URL, token="stale").with_connector_factory(server.connector)
        async with Vault({"login": stale}) as vault:
            task = asyncio.create_task(api.get(NS_URL, settings=settings, vault=vault))
            await vault.wait_for_emptiness()
            await vault.populate({"login": stale})  # the same rejected credentials again
            with pytest.raises(LoginError) as e:
                await task
            assert isinstance(e.value.__cause__, errors.APIUnauthorizedError)


async def test_authorization_headers(settings: OperatorSettings, recorder: Recorder, server: InMemoryServer) -> None:
    infos = {
        "bearer": ConnectionInfo(DEFAULT_BASE_URL, token="abc"),
        "scheme": ConnectionInfo(DEFAULT_BASE_URL, scheme="Digest", token="xyz", priority=-1),
        "basic": ConnectionInfo(DEFAULT_BASE_URL, username="user", password="pass", priority=-2),
    }
    async with Vault({k: v.with_connector_factory(server.connector) for k, v in infos.items()}) as vault:
        await api.get(NS_URL, settings=settings, vault=vault)
        await vault.invalidate("bearer")
        await api.get(NS_URL, settings=settings, vault=vault)
        await vault.invalidate("scheme")
        await api.get(NS_URL, settings=settings, vault=vault)
    auths = [headers.get("Authorization") for headers in recorder.headers]
    assert auths == ["Bearer abc", "Digest xyz", "Basic " + base64.b64encode(b"user:pass").decode()]
    assert all(headers["User-Agent"] == f"kopf/{importlib.metadata.version('kopf')}" for headers in recorder.headers)


async def test_sessions_are_reused_and_closed_with_the_vault(
    settings: OperatorSettings, server: InMemoryServer
) -> None:
    made = []

    def factory() -> aiohttp.BaseConnector:
        made.append(server.connector())
        return made[-1]

    async with Vault({"x": ConnectionInfo(DEFAULT_BASE_URL).with_connector_factory(factory)}) as vault:
        for _ in range(3):
            await api.get(NS_URL, settings=settings, vault=vault)
        assert len(made) == 1
    assert made[0].closed


async def test_depleted_iteration_without_invalidation_is_an_access_error() -> None:
    vault = Vault({"x": ConnectionInfo(DEFAULT_BASE_URL)})

    async def never_invalidating(info: ConnectionInfo, session: aiohttp.ClientSession) -> None:
        raise errors.APIUnauthorizedError(status=401)

    async def only_once(*_: object, **__: object) -> None:
        pass  # a broken vault consumer: does not invalidate

    vault.invalidate = only_once  # type: ignore[method-assign]
    with pytest.raises(AccessError):
        await auth.authenticated(never_invalidating, vault=vault)
    await vault.close()


def test_errors_from_statuses() -> None:
    assert type(errors.make_error(422)) is errors.APIUnprocessableEntityError
    assert type(errors.make_error(418)) is errors.APIClientError
    assert type(errors.make_error(504)) is errors.APIServerError
    err = errors.make_error(429, {"kind": "Status", "details": {"retryAfterSeconds": 3}}, headers={})
    assert err.retry_after == 3
    err = errors.make_error(429, None, headers={"Retry-After": "5"})
    assert err.retry_after == 5
    assert errors.parse_status(b"not json") is None
    assert errors.parse_status(b'{"kind": "Pod"}') is None
