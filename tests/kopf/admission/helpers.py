"""What the admission tests share: the reviews they craft, the objects they write, and how they wait."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from kopf._cogs.clients import creating, patching
from kopf._cogs.clients import errors as clients_errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import reviews
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource
from kopf._core.engines import admission
from kopf._core.intents.registries import OperatorRegistry
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer

from ..crds import KOPFEXAMPLES_CRD

KEX = Resource(
    "kopf.dev",
    "v1",
    "kopfexamples",
    kind="KopfExample",
    singular="kopfexample",
    shortcuts=frozenset({"kex"}),
    namespaced=True,
    subresources=frozenset({"status"}),
)
PODS = Resource("", "v1", "pods", kind="Pod", namespaced=True, subresources=frozenset({"status", "log"}))
VALIDATING = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
MUTATING = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")

CRD = KOPFEXAMPLES_CRD


def make_review(
    operation: str = "CREATE",
    *,
    obj: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    resource: tuple[str, str, str] = ("kopf.dev", "v1", "kopfexamples"),
    subresource: str | None = None,
    dry_run: bool = False,
    uid: str = "uid-1",
) -> dict[str, Any]:
    group, version, plural = resource
    if obj is None and operation != "DELETE":
        metadata: dict[str, Any] = {"name": "kex1", "namespace": "default"}
        if labels is not None:
            metadata["labels"] = labels
        obj = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata}
        if spec is not None:
            obj["spec"] = spec
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": "KopfExample"},
        "resource": {"group": group, "version": version, "resource": plural},
        "name": "kex1",
        "namespace": "default",
        "operation": operation,
        "userInfo": {"username": "admin", "uid": "admin-uid", "groups": ["system:masters"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
    }
    if subresource is not None:
        request["subResource"] = subresource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def decode_patch(response: reviews.Response) -> list[dict[str, Any]]:
    assert response["response"].get("patchType") == "JSONPatch"
    patch: list[dict[str, Any]] = json.loads(base64.b64decode(response["response"]["patch"]))
    return patch


async def serve(
    registry: OperatorRegistry, settings: OperatorSettings, review: dict[str, Any], **kwargs: Any
) -> reviews.Response:
    return await admission.serve_admission_request(review, registry=registry, settings=settings, **kwargs)


def configurations(cluster: Cluster, key: tuple[str, str]) -> dict[str, dict[str, Any]]:
    """The webhooks of the managed configurations of a kind, by their names."""
    found = {obj["metadata"]["name"]: obj for obj in cluster.objects(key)}
    if not found:
        return {}
    assert set(found) == {"auto.kopf.dev"}
    return {hook["name"]: hook for hook in found["auto.kopf.dev"].get("webhooks") or []}


async def until(predicate: Callable[[], Any], *, timeout: float = 10, step: float = 0) -> None:
    """
    Wait until the predicate holds; no real sleeps: only the event loop's cycles (incl. real I/O),
    or, under looptime, the virtual time steps (there, the time does not advance by cycling alone).
    """
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(step)


def kex(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def check_admission_end_to_end(
    cluster: Cluster, apiserver: InMemoryServer, vault: Vault, settings: OperatorSettings
) -> None:
    """The same checks for the served & in-process webhooks: denial, mutation, warnings."""
    with pytest.raises(clients_errors.APIClientError) as err:
        await creating.create_obj(resource=KEX, body=kex("bad1", field="bad"), settings=settings, vault=vault)
    assert err.value.status == 400
    assert 'admission webhook "check-field.auto.kopf.dev" denied the request: The field must not be bad.' in str(
        err.value
    )
    assert cluster.peek(("kopf.dev", "kopfexamples"), "default", "bad1") is None

    created = await creating.create_obj(resource=KEX, body=kex("good1", field="ok"), settings=settings, vault=vault)
    assert created["spec"] == {"field": "ok", "numbers": [1, 2, 3]}
    stored = cluster.peek(("kopf.dev", "kopfexamples"), "default", "good1")
    assert stored is not None and stored["spec"] == {"field": "ok", "numbers": [1, 2, 3]}

    # The mutation is not applied when not needed; the update goes through the webhooks too.
    patched = await patching.patch_obj(
        resource=KEX,
        namespace="default",
        name="good1",
        patch={"spec": {"numbers": [7]}},
        settings=settings,
        vault=vault,
    )
    assert patched is not None and patched["spec"] == {"field": "ok", "numbers": [7]}
    with pytest.raises(clients_errors.APIClientError):
        await patching.patch_obj(
            resource=KEX,
            namespace="default",
            name="good1",
            patch={"spec": {"field": "bad"}},
            settings=settings,
            vault=vault,
        )

    # The warnings reach the API clients as the Warning headers.
    async with apiserver.session() as session:
        url = "/apis/kopf.dev/v1/namespaces/default/kopfexamples"
        async with session.post(url, json=kex("good2")) as response:
            assert response.status == 201
            assert response.headers.getall("Warning") == ['299 - "Checked by the operator."']


class FakeInsights:
    """The served resources as the reactor's insights would report them."""

    def __init__(self) -> None:
        self.resources: set[Resource] = set()
        self.revision = 0
        self.ready_resources = asyncio.Event()
        self.revised = asyncio.Condition()

    async def revise(self, resources: set[Resource]) -> None:
        self.resources = resources
        self.revision += 1
        self.ready_resources.set()
        async with self.revised:
            self.revised.notify_all()

    async def wait_for_revision(self, seen: int) -> int:
        async with self.revised:
            await self.revised.wait_for(lambda: self.revision != seen)
        return self.revision
