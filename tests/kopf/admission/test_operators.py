"""Whole operators: the admission webhook server is one of the operator's tasks (if there are handlers)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import kopf
from kopf._cogs.clients import creating
from kopf._cogs.clients import errors as clients_errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import reviews
from kopf._cogs.structs.credentials import Vault
from kopf._core.engines import admission
from kopf._core.intents.registries import OperatorRegistry
from kopf_sim.http.app import ADMISSION_KEY
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer

from .helpers import (
    KEX,
    MUTATING,
    VALIDATING,
    configurations,
    kex,
    until,
)

#
# Whole operators: the admission webhook server is one of the operator's tasks (if there are handlers).
#


@pytest.mark.looptime
async def test_operator_serves_the_admission_and_cleans_up(
    cluster: Cluster,
    server: InMemoryServer,
    vault: Vault,
    settings: OperatorSettings,
    operator_registry: OperatorRegistry,
) -> None:
    client_config: reviews.WebhookClientConfig = {"url": "https://kopf.in-process/op"}
    control = server.app[ADMISSION_KEY]
    for url, handler in admission.in_process_endpoints(
        registry=operator_registry, settings=settings, client_config=client_config
    ).items():
        control.register(url, handler)

    @kopf.on.startup(registry=operator_registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        async def in_process_server(fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
            yield client_config
            await asyncio.Event().wait()

        settings.admission.server = in_process_server
        settings.admission.managed = "auto.kopf.dev"

    settings.peering.standalone = True
    stop_flag, ready_flag = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        kopf.operator(
            registry=operator_registry,
            settings=settings,
            vault=vault,
            clusterwide=True,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    )
    try:
        await until(lambda: configurations(cluster, VALIDATING) and configurations(cluster, MUTATING), step=0.1)
        hook = configurations(cluster, VALIDATING)["check-field.auto.kopf.dev"]
        assert hook["rules"] == [
            {
                "apiGroups": ["kopf.dev"],
                "apiVersions": ["v1"],
                "resources": ["kopfexamples"],
                "operations": ["*"],
                "scope": "*",
            }
        ]
        with pytest.raises(clients_errors.APIClientError) as err:
            await creating.create_obj(resource=KEX, body=kex("bad1", field="bad"), settings=settings, vault=vault)
        assert "denied the request: The field must not be bad." in str(err.value)
        created = await creating.create_obj(resource=KEX, body=kex("good1"), settings=settings, vault=vault)
        assert created["spec"] == {"numbers": [1, 2, 3]}
    finally:
        stop_flag.set()
        await asyncio.wait_for(task, timeout=60)
    assert list(configurations(cluster, VALIDATING)) == ["audit.auto.kopf.dev"]
    assert configurations(cluster, MUTATING) == {}


@pytest.mark.looptime
async def test_operator_fails_with_no_server_configured(
    vault: Vault, settings: OperatorSettings, operator_registry: OperatorRegistry
) -> None:
    settings.peering.standalone = True
    with pytest.raises(admission.WebhookServerNotConfiguredError):
        await asyncio.wait_for(
            kopf.operator(registry=operator_registry, settings=settings, vault=vault, clusterwide=True), timeout=60
        )


@pytest.mark.looptime
async def test_operator_without_admission_handlers_needs_no_server(
    vault: Vault, settings: OperatorSettings, registry: OperatorRegistry
) -> None:
    kopf.on.create("kopfexamples", registry=registry)(lambda **_: None)
    settings.peering.standalone = True
    tasks = await kopf.spawn_tasks(registry=registry, settings=settings, vault=vault, clusterwide=True)
    try:
        assert "admission webhook server" not in {task.get_name() for task in tasks}
        await asyncio.sleep(0)  # let them start, so that their coroutines are closed properly.
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
