"""The apiserver's dispatch rules of admission webhooks, in memory: match policies, reinvocation, review versions,
the checks of the responses, denials, the apiserver's error texts, and every write verb admitted the same way.

What they fake: the webhooks, as in-process handlers of the simulated apiserver (the same reviews as over HTTPS;
tests/sim/test_admission_served.py drives the same rules over HTTPS with kubectl and the official client).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from kopf_sim.admission.control import AdmissionControl
from kopf_sim.admission.dispatching import SynchronousWriteError
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing import virtualtime
from kopf_sim.transports.inmemory import InMemoryServer
from tests.helpers import widget

Review = dict[str, Any]
Hook = Callable[[Review], Awaitable[Review]]
WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"
GADGETS = "/apis/acme.example/{version}/namespaces/default/gadgets"
URL = "https://hooks.example/review"
CONFIGS = "/apis/admissionregistration.k8s.io/v1"
MERGE = {"Content-Type": "application/merge-patch+json"}

GADGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.acme.example"},
    "spec": {
        "group": "acme.example",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": name,
                "served": True,
                "storage": name == "v1",
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
            for name in ("v1", "v2")
        ],
    },
}


def webhook(name: str, *, url: str = URL, resources: tuple[str, ...] = ("widgets",), **fields: Any) -> Review:
    rule = {
        "apiGroups": ["acme.example"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE", "DELETE"],
        "resources": list(resources),
    }
    return {
        "name": name,
        "clientConfig": {"url": url},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [rule],
        **fields,
    }


def configuration(kind: str, name: str, *hooks: Review) -> Review:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }


def answer(review: Review, **response: Any) -> Review:
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], **response},
    }


def patched(review: Review, *operations: Review, **response: Any) -> Review:
    encoded = base64.b64encode(json.dumps(list(operations)).encode()).decode()
    return answer(review, allowed=True, patchType="JSONPatch", patch=encoded, **response)


class Api:
    """A client of the simulated apiserver (in memory) with the Widget and the two-version Gadget CRDs."""

    def __init__(self, session: aiohttp.ClientSession, control: AdmissionControl, cluster: Cluster) -> None:
        self.session, self.control, self.cluster = session, control, cluster

    async def call(self, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Review]:
        async with self.session.request(method, path, json=body, headers=headers or None) as response:
            return response.status, await response.json()

    async def install(self, config: Review) -> None:
        status, body = await self.call("POST", f"{CONFIGS}/{config['kind'].lower()}s", config)
        assert status == 201, body

    def serve(self, hook: Hook, url: str = URL) -> None:
        self.control.register(url, hook)


@pytest.fixture
async def api(crd_cluster: Cluster) -> AsyncIterator[Api]:
    crd_cluster.create(
        crd_cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, GADGETS_CRD
    )
    app = build_app(crd_cluster)
    async with InMemoryServer(app) as server, server.session() as session:
        yield Api(session, crd_cluster.admission, crd_cluster)


def recorder(seen: list[Review], reply: Callable[[Review], Review] | None = None) -> Hook:
    async def hook(review: Review) -> Review:
        seen.append(review)
        return reply(review) if reply is not None else answer(review, allowed=True)

    return hook


# -- Match policies ------------------------------------------------------------------------------------------


async def test_equivalent_match_calls_a_webhook_of_another_version_with_the_object_converted(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen, lambda r: answer(r, allowed=False, status={"message": "no v2 gadgets"})))
    await api.install(configuration("Validating", "v1only", webhook("gadgets.acme.example", resources=("gadgets",))))
    body = {"apiVersion": "acme.example/v2", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"x": 1}}
    status, result = await api.call("POST", GADGETS.format(version="v2"), body)
    assert status == 400 and result["message"].endswith("denied the request: no v2 gadgets")
    request = seen[0]["request"]
    assert request["kind"] == {"group": "acme.example", "version": "v1", "kind": "Gadget"}
    assert request["resource"] == {"group": "acme.example", "version": "v1", "resource": "gadgets"}
    assert request["requestKind"] == {"group": "acme.example", "version": "v2", "kind": "Gadget"}
    assert request["requestResource"] == {"group": "acme.example", "version": "v2", "resource": "gadgets"}
    assert request["object"]["apiVersion"] == "acme.example/v1"  # converted to the webhook's version
    assert api.cluster.count(("acme.example", "gadgets")) == 0


async def test_exact_match_calls_no_webhook_of_another_version(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen))
    hook = webhook("gadgets.acme.example", resources=("gadgets",), matchPolicy="Exact")
    await api.install(configuration("Validating", "exact", hook))
    body = {"apiVersion": "acme.example/v2", "kind": "Gadget", "metadata": {"name": "g1"}}
    status, _ = await api.call("POST", GADGETS.format(version="v2"), body)
    assert status == 201 and seen == []
    status, _ = await api.call("POST", GADGETS.format(version="v1"), {**body, "metadata": {"name": "g2"}})
    assert status == 201 and len(seen) == 1


async def test_a_mutation_through_another_version_is_converted_back(api: Api) -> None:
    api.serve(lambda r: _async(patched(r, {"op": "add", "path": "/spec/defaulted", "value": True})))
    await api.install(configuration("Mutating", "defaults", webhook("gadgets.acme.example", resources=("gadgets",))))
    body = {"apiVersion": "acme.example/v2", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {}}
    status, result = await api.call("POST", GADGETS.format(version="v2"), body)
    assert status == 201, result
    assert result["apiVersion"] == "acme.example/v2" and result["spec"] == {"defaulted": True}


async def _async(value: Review) -> Review:
    return value


# -- Reinvocation -----------------------------------------------------------------------------------------


async def test_if_needed_reinvokes_a_webhook_after_a_later_one_changed_the_object(api: Api) -> None:
    calls: list[str] = []

    async def first(review: Review) -> Review:
        calls.append(f"first:{sorted(review['request']['object']['spec'])}")
        return answer(review, allowed=True)

    async def second(review: Review) -> Review:
        calls.append("second")
        return patched(review, {"op": "add", "path": "/spec/tags", "value": ["added"]})

    api.serve(first, "https://hooks.example/first")
    api.serve(second, "https://hooks.example/second")
    await api.install(
        configuration(
            "Mutating",
            "a-first",
            webhook("first.acme.example", url="https://hooks.example/first", reinvocationPolicy="IfNeeded"),
        )
    )
    await api.install(
        configuration("Mutating", "b-second", webhook("second.acme.example", url="https://hooks.example/second"))
    )
    status, _ = await api.call("POST", WIDGETS, widget("w1", size=1))
    assert status == 201
    # Called again once, with the second one's change; the second one (Never) is not called again.
    assert calls == ["first:['color', 'size']", "second", "first:['color', 'size', 'tags']"]


async def test_never_reinvokes_and_no_change_reinvokes_nothing(api: Api) -> None:
    calls: list[str] = []

    async def first(review: Review) -> Review:
        calls.append("first")
        return answer(review, allowed=True)

    async def second(review: Review) -> Review:
        calls.append("second")
        return answer(review, allowed=True)

    api.serve(first, "https://hooks.example/first")
    api.serve(second, "https://hooks.example/second")
    hooks = (
        webhook("first.acme.example", url="https://hooks.example/first", reinvocationPolicy="IfNeeded"),
        webhook("second.acme.example", url="https://hooks.example/second", reinvocationPolicy="IfNeeded"),
    )
    await api.install(configuration("Mutating", "both", *hooks))
    status, _ = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 201 and calls == ["first", "second"]


# -- Review versions and the checks of the responses --------------------------------------------------------


async def test_the_review_version_is_the_first_one_the_webhook_accepts_that_the_apiserver_knows(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen, lambda r: {"apiVersion": r["apiVersion"], "response": {"allowed": True}}))
    hook = webhook("old.acme.example", admissionReviewVersions=["v2alpha9", "v1beta1", "v1"])
    await api.install(configuration("Validating", "old", hook))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 201, result  # v1beta1 responses need neither the uid nor the kind
    assert seen[0]["apiVersion"] == "admission.k8s.io/v1beta1"


def _no_kind(review: Review) -> Review:
    return {"response": {"uid": review["request"]["uid"], "allowed": True}}


def _no_response(review: Review) -> Review:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}


def _other_uid(review: Review) -> Review:
    return {**answer(review, allowed=True), "response": {"uid": "other", "allowed": True}}


def _core_kind_and_other_uid(review: Review) -> Review:  # the kind is checked before the uid
    return {"apiVersion": "v1", "kind": "Status", "response": {"uid": "other", "allowed": True}}


def _validating_patch(review: Review) -> Review:
    return answer(review, allowed=True, patch="W10=")


def _validating_patch_type(review: Review) -> Review:
    return answer(review, allowed=True, patchType="JSONPatch")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (_no_kind, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="),
        (_no_response, "webhook response was absent"),
        (_other_uid, 'expected response.uid="{uid}", got "other"'),
        (
            _core_kind_and_other_uid,
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /v1, Kind=Status",
        ),
        (_validating_patch, "validating webhook may not return response.patch"),
        (_validating_patch_type, "validating webhook may not return response.patchType"),
    ],
)
async def test_responses_that_the_apiserver_refuses(api: Api, reply: Callable[[Review], Review], reason: str) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen, reply))
    await api.install(configuration("Validating", "strict", webhook("strict.acme.example")))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 500 and result["reason"] == "InternalError"
    assert result["message"] == (
        'Internal error occurred: failed calling webhook "strict.acme.example": received invalid webhook response: '
        + reason.format(uid=seen[0]["request"]["uid"])
    )
    assert api.cluster.count(("acme.example", "widgets")) == 0


async def test_a_mutating_patch_needs_its_patch_type_and_the_failure_policy_may_ignore_it(api: Api) -> None:
    async def hook(review: Review) -> Review:
        encoded = base64.b64encode(b'[{"op": "add", "path": "/spec/size", "value": 3}]').decode()
        return answer(review, allowed=True, patch=encoded)

    api.serve(hook)
    await api.install(configuration("Mutating", "sloppy", webhook("sloppy.acme.example")))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 500
    assert result["message"] == (
        'Internal error occurred: failed calling webhook "sloppy.acme.example": '
        "received invalid webhook response: webhook returned response.patch but not response.patchType"
    )
    await api.install(configuration("Mutating", "tolerated", webhook("tolerant.acme.example", failurePolicy="Ignore")))
    await api.call("DELETE", f"{CONFIGS}/mutatingwebhookconfigurations/sloppy")
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 201 and "size" not in result["spec"]  # the broken answer is ignored as a failed call


async def test_a_patch_of_another_type_is_refused_in_v1_and_a_failed_call_in_v1beta1(api: Api) -> None:
    merge = base64.b64encode(b'{"spec": {"size": 3}}').decode()
    api.serve(lambda r: _async(answer(r, allowed=True, patchType="MergePatch", patch=merge)))
    await api.install(configuration("Mutating", "merger", webhook("merger.acme.example")))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 500
    assert result["message"] == (
        'Internal error occurred: failed calling webhook "merger.acme.example": '
        'received invalid webhook response: webhook returned invalid response.patchType of "MergePatch"'
    )

    # v1beta1 answers are not checked so: a patch without its type fails when applied, as a failed call.
    sloppy = base64.b64encode(b'[{"op": "add", "path": "/spec/size", "value": 3}]').decode()
    api.serve(lambda r: _async(answer(r, allowed=True, patch=sloppy)))
    old = webhook("old.acme.example", admissionReviewVersions=["v1beta1"])
    await api.call("DELETE", f"{CONFIGS}/mutatingwebhookconfigurations/merger")
    await api.install(configuration("Mutating", "old", old))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 500
    assert result["message"] == (
        'Internal error occurred: failed calling webhook "old.acme.example": unsupported patch type ""'
    )
    await api.call("DELETE", f"{CONFIGS}/mutatingwebhookconfigurations/old")
    await api.install(configuration("Mutating", "old", {**old, "failurePolicy": "Ignore"}))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 201 and "size" not in result["spec"]


@pytest.mark.parametrize("empty", [b"[]", b"null"])
async def test_an_empty_patch_on_delete_changes_nothing(api: Api, empty: bytes) -> None:
    encoded = base64.b64encode(empty).decode()
    api.serve(lambda r: _async(answer(r, allowed=True, patchType="JSONPatch", patch=encoded)))
    assert (await api.call("POST", WIDGETS, widget("w1")))[0] == 201
    await api.install(configuration("Mutating", "noop", webhook("noop.acme.example")))
    status, _ = await api.call("DELETE", f"{WIDGETS}/w1")
    assert status == 200
    assert api.cluster.count(("acme.example", "widgets")) == 0


async def test_a_patch_on_delete_fails_the_request_whatever_the_policy(api: Api) -> None:
    api.serve(lambda r: _async(patched(r, {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}})))
    assert (await api.call("POST", WIDGETS, widget("w1")))[0] == 201
    await api.install(configuration("Mutating", "meddler", webhook("meddler.acme.example", failurePolicy="Ignore")))
    status, result = await api.call("DELETE", f"{WIDGETS}/w1")
    assert status == 500
    assert result["message"] == (
        'Internal error occurred: admission webhook "meddler.acme.example" attempted to modify the object, '
        "which is not supported for this operation"
    )
    assert api.cluster.count(("acme.example", "widgets")) == 1


async def test_a_patch_that_does_not_apply_is_an_internal_error_whatever_the_policy(api: Api) -> None:
    api.serve(lambda r: _async(patched(r, {"op": "replace", "path": "/spec/missing/deep", "value": 1})))
    await api.install(configuration("Mutating", "broken", webhook("broken.acme.example", failurePolicy="Ignore")))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 500 and result["message"].startswith("Internal error occurred: ")
    assert api.cluster.count(("acme.example", "widgets")) == 0


# -- Denials ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        ({"code": 200, "message": "too small"}, 400, "too small"),
        ({"code": 302}, 400, None),
        ({"reason": "NotAllowed"}, 400, "NotAllowed"),
        ({"code": 403, "reason": "Forbidden", "message": "go away"}, 403, "go away"),
        ({"status": "Success", "code": 409, "message": "later"}, 409, "later"),
    ],
)
async def test_denials_are_normalised_as_the_apiserver_does(api: Api, status: Review, code: int, message: str) -> None:
    api.serve(lambda r: _async(answer(r, allowed=False, status=status)))
    await api.install(configuration("Validating", "deny", webhook("deny.acme.example", failurePolicy="Ignore")))
    got, result = await api.call("POST", WIDGETS, widget("w1"))
    denied = 'admission webhook "deny.acme.example" denied the request'
    assert got == code  # a denial is no failed call: the failure policy does not apply
    assert result["status"] == "Failure"
    assert result["message"] == (f"{denied}: {message}" if message else f"{denied} without explanation")
    assert result.get("reason", "") == status.get("reason", "")


async def test_the_first_refusal_to_arrive_is_the_answer(api: Api) -> None:
    async def slow(review: Review) -> Review:
        await asyncio.sleep(0.01)
        return answer(review, allowed=False, status={"message": "slow"})

    async def fast(review: Review) -> Review:
        return answer(review, allowed=False, status={"message": "fast"})

    api.serve(slow, "https://hooks.example/slow")
    api.serve(fast, "https://hooks.example/fast")
    hooks = (
        webhook("slow.acme.example", url="https://hooks.example/slow"),
        webhook("fast.acme.example", url="https://hooks.example/fast"),
    )
    await api.install(configuration("Validating", "both", *hooks))
    _, result = await api.call("POST", WIDGETS, widget("w1"))
    assert result["message"] == 'admission webhook "fast.acme.example" denied the request: fast'


# -- Calls that fail, in the apiserver's words ---------------------------------------------------------------


async def test_a_refused_connection_in_gos_words_with_the_timeout_on_the_url(api: Api) -> None:
    url = "https://127.0.0.1:1/check"
    await api.install(configuration("Validating", "down", webhook("down.acme.example", url=url, timeoutSeconds=3)))
    status, result = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 500 and result["reason"] == "InternalError"
    assert result["message"] == (
        'Internal error occurred: failed calling webhook "down.acme.example": failed to call webhook: '
        'Post "https://127.0.0.1:1/check?timeout=3s": dial tcp 127.0.0.1:1: connect: connection refused'
    )


def test_a_hanging_webhook_times_out_in_virtual_time(crd_cluster: Cluster) -> None:
    async def hang(review: Review) -> Review:
        await asyncio.sleep(3600)
        return answer(review, allowed=True)

    async def main() -> tuple[int, Review, float]:
        crd_cluster.admission.register(URL, hang)
        async with InMemoryServer(build_app(crd_cluster)) as server, server.session() as session:
            api = Api(session, crd_cluster.admission, crd_cluster)
            await api.install(configuration("Validating", "slow", webhook("slow.acme.example", timeoutSeconds=7)))
            started = asyncio.get_running_loop().time()
            status, result = await api.call("POST", WIDGETS, widget("w1"))
            return status, result, asyncio.get_running_loop().time() - started

    status, result, elapsed = virtualtime.run(main())
    assert status == 500 and elapsed == pytest.approx(7)
    assert result["message"] == (
        'Internal error occurred: failed calling webhook "slow.acme.example": failed to call webhook: '
        f'Post "{URL}?timeout=7s": context deadline exceeded'
    )
    assert crd_cluster.count(("acme.example", "widgets")) == 0


async def test_a_failed_call_is_ignored_by_the_ignore_policy(api: Api) -> None:
    url = "https://127.0.0.1:1/check"
    await api.install(
        configuration("Validating", "down", webhook("down.acme.example", url=url, failurePolicy="Ignore"))
    )
    status, _ = await api.call("POST", WIDGETS, widget("w1"))
    assert status == 201


# -- The request as the webhooks see it -------------------------------------------------------------------


async def test_a_generated_name_is_not_in_the_request(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen))
    await api.install(configuration("Mutating", "m", webhook("m.acme.example")))
    await api.install(configuration("Validating", "v", webhook("v.acme.example")))
    body = widget("")
    body["metadata"] = {"generateName": "w-"}
    status, result = await api.call("POST", WIDGETS, body)
    assert status == 201 and result["metadata"]["name"].startswith("w-")
    mutating, validating = (review["request"] for review in seen)
    assert "name" not in mutating and "name" not in validating  # the apiserver sends no name
    assert "name" not in mutating["object"]["metadata"]
    assert validating["object"]["metadata"]["name"] == result["metadata"]["name"]


async def test_every_verb_is_admitted(api: Api) -> None:
    seen: list[str] = []

    async def hook(review: Review) -> Review:
        request = review["request"]
        parts = (request["operation"], request.get("subResource"), request["options"]["kind"])
        seen.append(" ".join(part for part in parts if part))
        return answer(review, allowed=True)

    api.serve(hook)
    rule_resources = ("widgets", "widgets/status")
    await api.install(configuration("Validating", "all", webhook("all.acme.example", resources=rule_resources)))
    await api.call("POST", WIDGETS, widget("w1"))
    _, current = await api.call("GET", f"{WIDGETS}/w1")
    await api.call("PUT", f"{WIDGETS}/w1", current)
    await api.call("PATCH", f"{WIDGETS}/w1", {"spec": {"size": 2}}, **MERGE)
    await api.call("PATCH", f"{WIDGETS}/w1/status", {"status": {"ok": True}}, **MERGE)
    apply = {"apiVersion": "acme.example/v1", "kind": "Widget", "metadata": {"name": "w2"}, "spec": {"size": 1}}
    await api.call("PATCH", f"{WIDGETS}/w2?fieldManager=me", apply, **{"Content-Type": "application/apply-patch+yaml"})
    await api.call("DELETE", f"{WIDGETS}/w1")
    await api.call("DELETE", WIDGETS)  # deletecollection: each item, with no name
    assert seen == [
        "CREATE CreateOptions",
        "UPDATE UpdateOptions",
        "UPDATE UpdateOptions",
        "UPDATE status UpdateOptions",
        "CREATE CreateOptions",
        "DELETE DeleteOptions",
        "DELETE DeleteOptions",
    ]


async def test_scale_is_admitted_with_scale_objects_and_can_be_refused(api: Api) -> None:
    seen: list[Review] = []
    api.serve(recorder(seen, lambda r: answer(r, allowed=False, status={"code": 422, "message": "no scaling"})))
    assert (await api.call("POST", WIDGETS, widget("w1", replicas=1)))[0] == 201
    await api.install(configuration("Validating", "scale", webhook("scale.acme.example", resources=("widgets/scale",))))
    status, result = await api.call("PATCH", f"{WIDGETS}/w1/scale", {"spec": {"replicas": 5}}, **MERGE)
    assert status == 422 and result["message"].endswith("denied the request: no scaling")
    request = seen[0]["request"]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["resource"] == {"group": "acme.example", "version": "v1", "resource": "widgets"}
    assert request["subResource"] == "scale"
    assert request["object"]["kind"] == "Scale" and request["object"]["spec"] == {"replicas": 5}
    assert request["oldObject"]["spec"] == {"replicas": 1}
    assert api.cluster.peek(("acme.example", "widgets"), "default", "w1")["spec"]["replicas"] == 1


async def test_a_mutating_webhook_may_change_the_requested_scale(api: Api) -> None:
    api.serve(lambda r: _async(patched(r, {"op": "replace", "path": "/spec/replicas", "value": 3})))
    assert (await api.call("POST", WIDGETS, widget("w1", replicas=1)))[0] == 201
    await api.install(configuration("Mutating", "cap", webhook("cap.acme.example", resources=("widgets/scale",))))
    status, result = await api.call("PATCH", f"{WIDGETS}/w1/scale", {"spec": {"replicas": 10}}, **MERGE)
    assert status == 200 and result["kind"] == "Scale" and result["spec"] == {"replicas": 3}
    assert api.cluster.peek(("acme.example", "widgets"), "default", "w1")["spec"]["replicas"] == 3


async def test_synchronous_writes_refuse_to_call_webhooks(api: Api) -> None:
    api.serve(recorder([]))
    await api.install(configuration("Validating", "v", webhook("v.acme.example")))
    rtype = api.cluster.resource("acme.example", "v1", "widgets")
    with pytest.raises(SynchronousWriteError, match=r"cannot call the admission webhook 'v\.acme\.example'"):
        api.cluster.create(rtype, "default", widget("w1"))
    assert api.cluster.count(("acme.example", "widgets")) == 0
    created = await api.cluster.writes.create(rtype, "default", widget("w1"))
    assert created["metadata"]["name"] == "w1"
