"""The simulated apiserver's dynamic admission: webhook matching, mutation, validation, failures, dispatch."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from kopf_sim.admission.control import AdmissionControl
from kopf_sim.http.app import ADMISSION_KEY, build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer
from kopf_sim.transports.serving import ServedApp
from tests.helpers import widget

WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"
HOOK_URL = "https://hooks.example/check"
Review = dict[str, Any]


def configuration(kind: str, name: str, *, url: str = HOOK_URL, **hook: Any) -> dict[str, Any]:
    webhook = {
        "name": name,
        "clientConfig": {"url": url},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [
            {
                "apiGroups": ["acme.example"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["widgets"],
                "scope": "*",
            }
        ],
        **hook,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [webhook],
    }


def allow(review: Review, **extra: Any) -> Review:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": True, **extra},
    }


def deny(review: Review, message: str, code: int = 400, **status: Any) -> Review:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": review["request"]["uid"],
            "allowed": False,
            "status": {"message": message, "code": code, **status},
        },
    }


def json_patch(*ops: dict[str, Any]) -> dict[str, str]:
    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(list(ops)).encode()).decode()}


@pytest.fixture
async def setup(crd_cluster: Cluster) -> AsyncIterator[tuple[aiohttp.ClientSession, AdmissionControl, Cluster]]:
    app = build_app(crd_cluster)
    async with InMemoryServer(app) as server, server.session() as session:
        yield session, app[ADMISSION_KEY], crd_cluster


async def install(session: aiohttp.ClientSession, body: dict[str, Any]) -> None:
    plural = body["kind"].lower() + "s"
    async with session.post(f"/apis/admissionregistration.k8s.io/v1/{plural}", json=body) as response:
        assert response.status == 201, await response.text()


async def test_validation_denies_with_the_webhooks_message_and_code(setup: Any) -> None:
    session, control, cluster = setup
    seen: list[Review] = []

    async def hook(review: Review) -> Review:
        seen.append(review)
        return deny(review, "size must be small", code=422, reason="Invalid")

    control.register(HOOK_URL, hook)
    await install(session, configuration("Validating", "check.acme.example"))
    rv = cluster.rv
    async with session.post(WIDGETS, json=widget("w1", size=100)) as response:
        status = await response.json()
        assert response.status == 422
    assert status["message"] == 'admission webhook "check.acme.example" denied the request: size must be small'
    assert status["reason"] == "Invalid"
    assert cluster.rv == rv
    request = seen[0]["request"]
    assert request["operation"] == "CREATE"
    assert request["resource"] == {"group": "acme.example", "version": "v1", "resource": "widgets"}
    assert request["object"]["spec"] == {"size": 100, "color": "blue"}
    assert request["object"]["metadata"]["uid"]  # validating webhooks see the full object
    assert request["oldObject"] is None and request["dryRun"] is False


async def test_denial_without_message_or_code(setup: Any) -> None:
    session, control, _ = setup

    async def hook(review: Review) -> Review:
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": False},
        }

    control.register(HOOK_URL, hook)
    await install(session, configuration("Validating", "check.acme.example"))
    async with session.post(WIDGETS, json=widget("w1")) as response:
        status = await response.json()
        assert response.status == 400  # the apiserver's code for a denial with none
    assert status["message"] == 'admission webhook "check.acme.example" denied the request without explanation'
    assert status["status"] == "Failure" and "reason" not in status


async def test_go_style_invalid_status_passes_through(setup: Any) -> None:
    session, control, _ = setup
    causes = [{"reason": "FieldValueInvalid", "message": "Invalid value: 100: too big", "field": "spec.size"}]

    async def hook(review: Review) -> Review:
        return deny(
            review,
            'Widget.acme.example "w1" is invalid: spec.size: Invalid value: 100: too big',
            422,
            reason="Invalid",
            status="Failure",
            details={"name": "w1", "group": "acme.example", "kind": "Widget", "causes": causes},
        )

    control.register(HOOK_URL, hook)
    await install(session, configuration("Validating", "check.acme.example"))
    async with session.post(WIDGETS, json=widget("w1", size=100)) as response:
        status = await response.json()
    assert status["code"] == 422 and status["details"]["causes"] == causes


async def test_warnings_reach_the_client(setup: Any) -> None:
    session, control, _ = setup

    async def hook(review: Review) -> Review:
        return allow(review, warnings=["colour is deprecated", 'quotes "inside"'])

    control.register(HOOK_URL, hook)
    await install(session, configuration("Validating", "check.acme.example"))
    async with session.post(WIDGETS, json=widget("w1")) as response:
        assert response.status == 201
        assert response.headers.getall("Warning") == ['299 - "colour is deprecated"', '299 - "quotes \\"inside\\""']


async def test_mutation_is_applied_and_revalidated(setup: Any) -> None:
    session, control, _cluster = setup
    views: list[Review] = []

    async def hook(review: Review) -> Review:
        views.append(review)
        return allow(
            review,
            **json_patch(
                {"op": "add", "path": "/spec/size", "value": 7},
                {"op": "add", "path": "/spec/junk", "value": 1},
                {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}},
            ),
        )

    control.register(HOOK_URL, hook)
    await install(session, configuration("Mutating", "defaults.acme.example"))
    body = widget("")
    body["metadata"] = {"generateName": "w-"}
    async with session.post(WIDGETS, json=body) as response:
        obj = await response.json()
        assert response.status == 201
    assert obj["spec"] == {"size": 7, "color": "blue"}  # the unknown field is pruned
    assert obj["metadata"]["labels"] == {"mutated": "yes"}
    assert obj["metadata"]["name"].startswith("w-")
    seen = views[0]["request"]["object"]["metadata"]
    assert "uid" not in seen and "name" not in seen and seen["generateName"] == "w-"


async def test_mutation_that_breaks_the_schema_is_rejected(setup: Any) -> None:
    session, control, cluster = setup

    async def hook(review: Review) -> Review:
        return allow(review, **json_patch({"op": "add", "path": "/spec/size", "value": "huge"}))

    control.register(HOOK_URL, hook)
    await install(session, configuration("Mutating", "defaults.acme.example"))
    async with session.post(WIDGETS, json=widget("w1")) as response:
        assert response.status == 422
        assert "spec.size in body must be of type integer" in (await response.json())["message"]
    assert cluster.count(("acme.example", "widgets")) == 0


async def test_failure_policies(setup: Any) -> None:
    session, _control, _cluster = setup
    await install(
        session, configuration("Validating", "strict.acme.example", url="https://127.0.0.1:9/x", timeoutSeconds=1)
    )
    async with session.post(WIDGETS, json=widget("w1")) as response:
        status = await response.json()
        assert response.status == 500
    assert status["message"].startswith(
        'Internal error occurred: failed calling webhook "strict.acme.example": failed to call webhook: '
    )
    async with session.delete(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/strict.acme.example"
    ) as response:
        assert response.status == 200
    await install(
        session, configuration("Validating", "lax.acme.example", url="https://127.0.0.1:9/x", failurePolicy="Ignore")
    )
    async with session.post(WIDGETS, json=widget("w1")) as response:
        assert response.status == 201


async def test_rules_operations_and_selectors(setup: Any) -> None:
    session, control, _ = setup
    calls: list[str] = []

    async def hook(review: Review) -> Review:
        calls.append(f"{review['request']['operation']} {review['request']['name']}")
        return allow(review)

    control.register(HOOK_URL, hook)
    await install(
        session,
        configuration("Validating", "labelled.acme.example", objectSelector={"matchLabels": {"checked": "yes"}}),
    )
    body = widget("a")
    async with session.post(WIDGETS, json=body) as response:
        assert response.status == 201
    body = widget("b")
    body["metadata"]["labels"] = {"checked": "yes"}  # type: ignore[index]
    async with session.post(WIDGETS, json=body) as response:
        assert response.status == 201
    async with session.delete(f"{WIDGETS}/b") as response:  # DELETE is not among the rule's operations
        assert response.status == 200
    async with session.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}}) as response:
        assert response.status == 201  # another resource: no call
    assert calls == ["CREATE b"]


async def test_status_subresource_needs_its_own_rule(setup: Any) -> None:
    session, control, _ = setup
    calls: list[str | None] = []

    async def hook(review: Review) -> Review:
        calls.append(review["request"].get("subResource"))
        return allow(review)

    control.register(HOOK_URL, hook)
    config = configuration("Validating", "status.acme.example")
    config["webhooks"][0]["rules"][0]["resources"] = ["widgets/status"]
    await install(session, config)
    async with session.post(WIDGETS, json=widget("w1")) as response:
        assert response.status == 201
    async with session.patch(
        f"{WIDGETS}/w1/status", json={"status": {"ok": True}}, headers={"Content-Type": "application/merge-patch+json"}
    ) as response:
        assert response.status == 200
    assert calls == ["status"]


async def test_dry_run_requests_reach_webhooks_as_dry_runs(setup: Any) -> None:
    session, control, cluster = setup
    seen: list[bool] = []

    async def hook(review: Review) -> Review:
        seen.append(review["request"]["dryRun"])
        return allow(review)

    control.register(HOOK_URL, hook)
    await install(session, configuration("Validating", "check.acme.example"))
    async with session.post(f"{WIDGETS}?dryRun=All", json=widget("w1")) as response:
        assert response.status == 201
    assert seen == [True] and cluster.count(("acme.example", "widgets")) == 0


async def test_dispatch_over_https_with_the_ca_bundle(crd_cluster: Cluster) -> None:
    received: list[Review] = []

    async def review_handler(request: web.Request) -> web.Response:
        review = await request.json()
        received.append(review)
        return web.json_response(deny(review, "nope"))

    hook_app = web.Application()
    hook_app.router.add_post("/validate", review_handler)
    async with ServedApp(hook_app, tls=True) as served:
        assert served.ca_pem is not None
        config = configuration("Validating", "remote.acme.example", url=f"{served.url}/validate")
        config["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(served.ca_pem).decode()
        async with InMemoryServer(build_app(crd_cluster)) as server, server.session() as session:
            await install(session, config)
            async with session.post(WIDGETS, json=widget("w1")) as response:
                assert response.status == 400
                assert (await response.json())["message"] == (
                    'admission webhook "remote.acme.example" denied the request: nope'
                )
    assert received[0]["kind"] == "AdmissionReview"
