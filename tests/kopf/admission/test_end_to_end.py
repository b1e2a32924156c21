"""End to end: the managed configurations, the webhook servers, the simulated apiserver calling them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import reviews
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import admission
from kopf._core.intents.registries import OperatorRegistry
from kopf._kits.webhooks import WebhookServer
from kopf_sim.http.app import ADMISSION_KEY
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer

from .helpers import (
    KEX,
    MUTATING,
    PODS,
    VALIDATING,
    FakeInsights,
    check_admission_end_to_end,
    configurations,
    make_review,
    until,
)


async def test_served_webhooks_end_to_end(
    cluster: Cluster,
    server: InMemoryServer,
    vault: Vault,
    settings: OperatorSettings,
    operator_registry: OperatorRegistry,
) -> None:
    # HTTPS with a self-signed certificate (its CA in the caBundle): an apiserver refuses http:// webhook URLs.
    settings.admission.server = WebhookServer(addr="127.0.0.1", host="127.0.0.1", port=0, path="/hooks")
    settings.admission.managed = "auto.kopf.dev"
    task = asyncio.create_task(
        admission.admission_webhook_server(registry=operator_registry, settings=settings, resources=[KEX], vault=vault)
    )
    try:
        await until(lambda: configurations(cluster, VALIDATING) and configurations(cluster, MUTATING))
        validating = configurations(cluster, VALIDATING)
        mutating = configurations(cluster, MUTATING)
        assert len(validating) == 2 and len(mutating) == 1
        audit = validating["audit.auto.kopf.dev"]
        assert audit["clientConfig"]["url"].startswith("https://127.0.0.1:")
        assert audit["clientConfig"]["caBundle"]
        assert audit["clientConfig"]["url"].endswith("/hooks/audit")
        assert audit["rules"][0]["operations"] == ["DELETE"]
        (defaults,) = mutating.values()
        assert defaults["clientConfig"]["url"].endswith("/hooks/defaults")
        await check_admission_end_to_end(cluster, server, vault, settings)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()

    # On exit, only the persistent webhooks remain; the server is stopped.
    assert list(configurations(cluster, VALIDATING)) == ["audit.auto.kopf.dev"]
    assert configurations(cluster, MUTATING) == {}
    assert cluster.count(MUTATING) == 0  # a configuration left with no webhooks is removed on exit.
    url = audit["clientConfig"]["url"]
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as session, session.post(url, json=make_review()):
            pass


async def test_in_process_webhooks_end_to_end(
    cluster: Cluster,
    server: InMemoryServer,
    vault: Vault,
    settings: OperatorSettings,
    operator_registry: OperatorRegistry,
) -> None:
    client_config: reviews.WebhookClientConfig = {"url": "https://kopf.in-process/hooks"}
    control = server.app[ADMISSION_KEY]
    for url, handler in admission.in_process_endpoints(
        registry=operator_registry, settings=settings, client_config=client_config, resources=[KEX]
    ).items():
        control.register(url, handler)

    async def in_process_server(fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        yield client_config
        await asyncio.Event().wait()

    settings.admission.server = in_process_server
    settings.admission.managed = "auto.kopf.dev"
    task = asyncio.create_task(
        admission.admission_webhook_server(registry=operator_registry, settings=settings, resources=[KEX], vault=vault)
    )
    try:
        await until(lambda: configurations(cluster, VALIDATING) and configurations(cluster, MUTATING))
        assert configurations(cluster, VALIDATING)["audit.auto.kopf.dev"]["clientConfig"] == {
            "url": "https://kopf.in-process/hooks/audit"
        }
        await check_admission_end_to_end(cluster, server, vault, settings)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert list(configurations(cluster, VALIDATING)) == ["audit.auto.kopf.dev"]
    assert configurations(cluster, MUTATING) == {}


async def test_reconfiguration_on_new_client_configs(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, operator_registry: OperatorRegistry
) -> None:
    queue: asyncio.Queue[reviews.WebhookClientConfig] = asyncio.Queue()

    async def tunnel(fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        while True:
            yield await queue.get()

    settings.admission.server = tunnel
    settings.admission.managed = "auto.kopf.dev"
    task = asyncio.create_task(
        admission.admission_webhook_server(registry=operator_registry, settings=settings, resources=[KEX], vault=vault)
    )
    try:

        def url_of_audit() -> str | None:
            hook = configurations(cluster, VALIDATING).get("audit.auto.kopf.dev")
            return hook["clientConfig"].get("url") if hook else None

        await queue.put({"url": "https://tunnel-1.example/x"})
        await until(lambda: url_of_audit() == "https://tunnel-1.example/x/audit")
        await queue.put({"url": "https://tunnel-2.example/y", "caBundle": "Q0E="})
        await until(lambda: url_of_audit() == "https://tunnel-2.example/y/audit")
        await until(
            lambda: (
                configurations(cluster, MUTATING)["defaults.auto.kopf.dev"]["clientConfig"]
                == {"url": "https://tunnel-2.example/y/defaults", "caBundle": "Q0E="}
            )
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert list(configurations(cluster, VALIDATING)) == ["audit.auto.kopf.dev"]


async def test_reconfiguration_on_new_resources(cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    registry = OperatorRegistry()
    kopf.on.validate(kopf.EVERYTHING, id="all", registry=registry)(lambda **_: None)
    insights = FakeInsights()
    configs = [{"url": "https://h/x"}]

    async def server(fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        for config in configs:
            yield config  # type: ignore[misc]
        await asyncio.Event().wait()

    settings.admission.server = server
    settings.admission.managed = "auto.kopf.dev"
    task = asyncio.create_task(
        admission.admission_webhook_server(registry=registry, settings=settings, insights=insights, vault=vault)
    )
    try:
        for _ in range(100):
            await asyncio.sleep(0)
        assert cluster.count(VALIDATING) == 0  # not before the resources are known.

        def resources_of_all() -> list[str]:
            hook = configurations(cluster, VALIDATING).get("all.auto.kopf.dev")
            return [name for rule in hook["rules"] for name in rule["resources"]] if hook else []

        await insights.revise({KEX})
        await until(lambda: resources_of_all() == ["kopfexamples"])
        await insights.revise({KEX, PODS})
        await until(lambda: resources_of_all() == ["pods", "kopfexamples"])
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert configurations(cluster, VALIDATING) == {}


async def test_unmanaged_configurations_are_not_touched(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, operator_registry: OperatorRegistry
) -> None:
    served = asyncio.Event()

    async def server(fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        yield {"url": "https://h/x"}
        served.set()
        await asyncio.Event().wait()

    settings.admission.server = server
    task = asyncio.create_task(
        admission.admission_webhook_server(registry=operator_registry, settings=settings, resources=[KEX], vault=vault)
    )
    try:
        await served.wait()
        for _ in range(100):
            await asyncio.sleep(0)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert cluster.count(VALIDATING) == cluster.count(MUTATING) == 0


async def test_server_exit_ends_the_admission(
    vault: Vault, settings: OperatorSettings, operator_registry: OperatorRegistry
) -> None:
    async def server(fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        yield {"url": "https://h/x"}

    settings.admission.server = server
    settings.admission.managed = "auto.kopf.dev"
    async with asyncio.timeout(10):
        await admission.admission_webhook_server(
            registry=operator_registry, settings=settings, resources=[KEX], vault=vault
        )


async def test_server_context_manager_is_used(
    vault: Vault, settings: OperatorSettings, operator_registry: OperatorRegistry
) -> None:
    events: list[str] = []

    class Substitute:
        async def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
            events.append("called")
            yield {"url": "https://h/x"}

    class Factory:
        async def __aenter__(self) -> Substitute:
            events.append("enter")
            return Substitute()

        async def __aexit__(self, *_: Any) -> None:
            events.append("exit")

        def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
            raise AssertionError("The substitute must be used.")

    settings.admission.server = Factory()
    async with asyncio.timeout(10):
        await admission.admission_webhook_server(
            registry=operator_registry, settings=settings, resources=[KEX], vault=vault
        )
    assert events == ["enter", "called", "exit"]


async def test_no_server_is_a_startup_error(settings: OperatorSettings, operator_registry: OperatorRegistry) -> None:
    with pytest.raises(admission.WebhookServerNotConfiguredError) as err:
        await admission.admission_webhook_server(registry=operator_registry, settings=settings)
    assert "settings.admission.server = kopf.WebhookServer()" in str(err.value)
    assert "settings.admission.managed" in str(err.value)


async def test_no_handlers_no_server_needed(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    admission.check_server(registry=registry, settings=settings)  # no error
    task = asyncio.create_task(admission.admission_webhook_server(registry=registry, settings=settings))
    for _ in range(10):
        await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
