"""
Fixtures for the reactor: the shared simulated cluster (tests/conftest.py) with the KopfExample CRD, and
an "operator" made of the reactor's watcher & processor (with no orchestration), started & stopped by the tests.

What they fake on top of the shared ones: nothing; the operator is kopf's own watcher and processor, only
without the orchestration of ``kopf.operator()``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kopf._cogs.clients import watching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.ephemera import Memo
from kopf._cogs.structs.references import Resource
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.memories import ResourceMemories
from kopf._core.reactor.processing import process_resource_event
from kopf._core.reactor.queueing import watcher
from kopf_sim.store.cluster import Cluster

from ..crds import KOPFEXAMPLES_CRD

MERGE = "application/merge-patch+json"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
DIFFBASE = "kopf.zalando.org/last-handled-configuration"

CRD = KOPFEXAMPLES_CRD

KEX = Resource(
    "kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True, subresources=frozenset({"status"})
)


class Objects:
    """Shortcuts to manipulate the objects directly in the simulated cluster (as kubectl would)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.rtype = cluster.resource("kopf.dev", "v1", "kopfexamples")

    def create(
        self,
        name: str,
        namespace: str = "default",
        *,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        **spec: Any,
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if labels:
            metadata["labels"] = labels
        if annotations:
            metadata["annotations"] = annotations
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata, "spec": spec}
        return self.cluster.create(self.rtype, namespace, body)

    def patch(self, name: str, patch: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
        return self.cluster.patch(self.rtype, namespace, name, patch, MERGE)

    def delete(self, name: str, namespace: str = "default") -> None:
        self.cluster.delete(self.rtype, namespace, name)

    def get(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        obj = self.cluster.peek(self.rtype.storage_key, namespace, name)
        return None if obj is None else dict(obj)

    def annotations(self, name: str, namespace: str = "default") -> dict[str, str]:
        obj = self.get(name, namespace) or {}
        return dict(obj.get("metadata", {}).get("annotations") or {})

    def finalizers(self, name: str, namespace: str = "default") -> list[str]:
        obj = self.get(name, namespace) or {}
        return list(obj.get("metadata", {}).get("finalizers") or [])

    def status(self, name: str, namespace: str = "default") -> dict[str, Any]:
        obj = self.get(name, namespace) or {}
        return dict(obj.get("status") or {})

    def results(self, name: str, namespace: str = "default") -> dict[str, Any]:
        """The status without the framework's own (progress) stanza: only the handlers' results."""
        return {key: val for key, val in self.status(name, namespace).items() if key != "kopf"}


async def process_event(
    raw_body: Any,
    *,
    event_type: str | None = "MODIFIED",
    pressure: asyncio.Event | None = None,
    registry: OperatorRegistry,
    settings: OperatorSettings,
    memories: ResourceMemories,
    vault: Vault,
    operator_paused: watching.PauseFlag | None = None,
) -> None:
    """One event of an object straight to the processor (no watcher): as the watcher would pass it."""
    await process_resource_event(
        raw_event={"type": event_type, "object": copy.deepcopy(raw_body)},  # type: ignore[typeddict-item]
        stream_pressure=pressure,
        resource=KEX,
        registry=registry,
        settings=settings,
        memories=memories,
        memo=Memo(),
        vault=vault,
        operator_paused=operator_paused,
    )


class Operator:
    """A minimal operator: one watcher of the resource with the real processor; restartable."""

    def __init__(
        self,
        *,
        vault: Vault,
        settings: OperatorSettings,
        registry: OperatorRegistry,
        resource: Resource = KEX,
        namespace: str | None = "default",
        memo: Any = None,
        **watcher_kwargs: Any,
    ) -> None:
        self.vault = vault
        self.settings = settings
        self.registry = registry
        self.resource = resource
        self.namespace = namespace
        self.memo = memo if memo is not None else Memo()
        self.watcher_kwargs = watcher_kwargs
        self.memories = ResourceMemories()
        self.task: asyncio.Task[None] | None = None

    def start(self, *, fresh: bool = False) -> None:
        if fresh:  # as after a restart of the operator's process: nothing is remembered.
            self.memories = ResourceMemories()
        processor = functools.partial(
            process_resource_event,
            resource=self.resource,
            registry=self.registry,
            settings=self.settings,
            memories=self.memories,
            memo=self.memo,
            vault=self.vault,
        )
        self.task = asyncio.create_task(
            watcher(
                namespace=self.namespace,
                resource=self.resource,
                settings=self.settings,
                processor=processor,
                vault=self.vault,
                **self.watcher_kwargs,
            )
        )

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            if not self.task.cancelled() and self.task.exception() is not None:
                raise self.task.exception()  # type: ignore[misc]
            self.task = None

    async def restart(self) -> None:
        await self.stop()
        self.start(fresh=True)


@pytest.fixture
def crds() -> list[dict[str, Any]]:
    return [CRD]


@pytest.fixture
def objects(cluster: Cluster) -> Objects:
    return Objects(cluster)


@pytest.fixture
def settings(settings: OperatorSettings) -> OperatorSettings:
    settings.posting.enabled = True
    return settings


@pytest.fixture
async def operator(vault: Vault, settings: OperatorSettings, registry: OperatorRegistry) -> AsyncIterator[Operator]:
    operator = Operator(vault=vault, settings=settings, registry=registry)
    try:
        yield operator
    finally:
        await operator.stop()


@pytest.fixture(autouse=True)
def _verbose_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kopf")
