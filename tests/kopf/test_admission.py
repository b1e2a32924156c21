"""
Admission control: serving the reviews by the handlers, building & managing the webhook configurations.

The unit tests call :func:`serve_admission_request` directly with crafted reviews. The end-to-end
tests run a simulated apiserver in memory (kopf's clients talk to it via the in-memory transport),
which calls the operator's webhooks either over HTTP on 127.0.0.1 (a real ``WebhookServer``)
or in-process (the simulator's ``AdmissionControl``), as configured by the managed configurations.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

import kopf
from kopf._cogs.clients import creating, patching
from kopf._cogs.clients import errors as clients_errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import reviews
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.ephemera import Memo
from kopf._cogs.structs.references import Resource
from kopf._core.engines import admission
from kopf._core.engines.admission_errors import AdmissionError
from kopf._core.intents.causes import WebhookType
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.memories import ResourceMemories
from kopf._kits.webhooks import WebhookServer
from kopf_sim.http.app import ADMISSION_KEY
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.inmemory import InMemoryServer

from .crds import KOPFEXAMPLES_CRD

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


@pytest.fixture
def registry() -> OperatorRegistry:
    return OperatorRegistry()


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.networking.error_backoffs = []  # the denials with 5xx codes are not retried by the clients.
    return settings


async def serve(
    registry: OperatorRegistry, settings: OperatorSettings, review: dict[str, Any], **kwargs: Any
) -> reviews.Response:
    return await admission.serve_admission_request(review, registry=registry, settings=settings, **kwargs)


#
# Serving the reviews: validation.
#


async def test_allowed_with_no_failures(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    calls: list[str] = []

    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        calls.append("check")

    response = await serve(registry, settings, make_review())
    assert response == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "uid-1", "allowed": True},
    }
    assert calls == ["check"]


async def test_denied_with_the_message_and_the_code(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(spec: Any, **_: Any) -> None:
        if spec.get("field") == "value":
            raise AdmissionError("Meh! Change the field.", code=499)

    response = await serve(registry, settings, make_review(spec={"field": "value"}))
    assert response["response"] == {
        "uid": "uid-1",
        "allowed": False,
        "status": {"code": 499, "message": "Meh! Change the field."},
    }
    response = await serve(registry, settings, make_review(spec={"field": "other"}))
    assert response["response"] == {"uid": "uid-1", "allowed": True}


async def test_admission_error_defaults_to_500(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    async def check(**_: Any) -> None:
        raise AdmissionError("No.")

    response = await serve(registry, settings, make_review())
    assert response["response"]["status"] == {"code": 500, "message": "No."}


async def test_denied_with_field_causes_as_the_apiservers_invalid_status(
    registry: OperatorRegistry, settings: OperatorSettings
) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise kopf.AdmissionError(
            "The example is invalid.",
            code=422,
            causes=[
                ("spec.field", 'Invalid value: "x": should be longer'),
                ("spec.items", "Required value", "FieldValueRequired"),
                {"field": "spec.mode", "message": 'Unsupported value: "fast"', "reason": "FieldValueNotSupported"},
            ],
        )

    response = await serve(registry, settings, make_review())
    assert response["response"]["status"] == {
        "code": 422,
        "message": "The example is invalid.",
        "reason": "Invalid",
        "details": {
            "name": "kex1",
            "group": "kopf.dev",
            "kind": "KopfExample",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "x": should be longer',
                    "field": "spec.field",
                },
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.items"},
                {"reason": "FieldValueNotSupported", "message": 'Unsupported value: "fast"', "field": "spec.mode"},
            ],
        },
    }


async def test_field_causes_without_a_message_are_listed_as_the_apiserver_words_them(
    registry: OperatorRegistry, settings: OperatorSettings
) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise kopf.AdmissionError(code=422, causes=[("spec.a", "Required value"), ("spec.b", "Forbidden: no")])

    status = (await serve(registry, settings, make_review()))["response"]["status"]
    assert (
        status["message"] == 'KopfExample.kopf.dev "kex1" is invalid: [spec.a: Required value, spec.b: Forbidden: no]'
    )
    assert [cause["reason"] for cause in status["details"]["causes"]] == ["FieldValueRequired", "FieldValueForbidden"]


async def test_a_reason_without_causes(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise kopf.AdmissionError("Not now.", code=409, reason="Conflict")

    status = (await serve(registry, settings, make_review()))["response"]["status"]
    assert status == {"code": 409, "message": "Not now.", "reason": "Conflict"}


@pytest.mark.parametrize(
    "cause",
    [("spec.a",), ("spec.a", ""), ("spec.a", "msg", "Reason", "extra"), {"field": 1, "message": "m"}, "spec.a: bad"],
)
def test_malformed_causes_are_refused_at_once(cause: Any) -> None:
    with pytest.raises(TypeError, match="admission cause"):
        kopf.AdmissionError("No.", code=422, causes=[cause])


@pytest.mark.parametrize(
    "error",
    [
        kopf.PermanentError("permanent"),
        kopf.TemporaryError("temporary"),
        ValueError("arbitrary"),
    ],
)
async def test_other_errors_deny_with_500(
    registry: OperatorRegistry, settings: OperatorSettings, error: Exception
) -> None:
    @kopf.on.mutate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        raise error

    response = await serve(registry, settings, make_review())
    assert response["response"] == {"uid": "uid-1", "allowed": False, "status": {"code": 500, "message": str(error)}}


async def test_warnings_are_returned(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def hello(warnings: list[str], **_: Any) -> None:
        warnings.append("Verified by the operator.")

    @kopf.on.validate("kopfexamples", registry=registry)
    async def numbers(spec: Any, warnings: list[str], **_: Any) -> None:
        for val in spec.get("numbers", []):
            if not isinstance(val, float):
                warnings.append(f"{val!r} is not a number but can be converted.")

    response = await serve(registry, settings, make_review(spec={"numbers": ["1", 2.0]}))
    assert response["response"] == {
        "uid": "uid-1",
        "allowed": True,
        "warnings": [
            "Verified by the operator.",
            "'1' is not a number but can be converted.",
        ],
    }


async def test_warnings_are_returned_with_denials(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(warnings: list[str], **_: Any) -> None:
        warnings.append("Careful.")
        raise AdmissionError("Denied.", code=400)

    response = await serve(registry, settings, make_review())
    assert response["response"] == {
        "uid": "uid-1",
        "allowed": False,
        "warnings": ["Careful."],
        "status": {"code": 400, "message": "Denied."},
    }


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        (
            [
                ValueError("arbitrary"),
                kopf.TemporaryError("temporary"),
                kopf.PermanentError("permanent"),
                AdmissionError("admission", code=400),
            ],
            (400, "admission"),
        ),
        (
            [ValueError("arbitrary"), kopf.TemporaryError("temporary"), kopf.PermanentError("permanent")],
            (500, "permanent"),
        ),
        ([ValueError("arbitrary"), kopf.TemporaryError("temporary")], (500, "temporary")),
        ([ValueError("arbitrary1"), ValueError("arbitrary2")], (500, "arbitrary1")),
        ([AdmissionError("first", code=401), AdmissionError("second", code=402)], (401, "first")),
    ],
)
async def test_one_error_is_reported_by_priority(
    registry: OperatorRegistry, settings: OperatorSettings, errors: list[Exception], expected: tuple[int, str]
) -> None:
    calls: list[int] = []
    for idx, error in enumerate(errors):

        def fn(idx: int = idx, error: Exception = error, **_: Any) -> None:
            calls.append(idx)
            raise error

        kopf.on.validate("kopfexamples", id=f"h{idx}", registry=registry)(fn)

    @kopf.on.validate("kopfexamples", registry=registry)
    def succeeding(**_: Any) -> None:
        calls.append(-1)

    response = await serve(registry, settings, make_review())
    assert calls == [*range(len(errors)), -1]  # all are executed despite the failures.
    code, message = expected
    assert response["response"] == {"uid": "uid-1", "allowed": False, "status": {"code": code, "message": message}}


async def test_ignored_failures_do_not_deny(
    registry: OperatorRegistry, settings: OperatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    @kopf.on.validate("kopfexamples", ignore_failures=True, registry=registry)
    def tolerant(**_: Any) -> None:
        raise AdmissionError("Ignored.", code=400)

    @kopf.on.validate("kopfexamples", ignore_failures=True, registry=registry)
    def tolerant2(**_: Any) -> None:
        raise RuntimeError("Also ignored.")

    caplog.set_level(logging.WARNING)
    response = await serve(registry, settings, make_review())
    assert response["response"] == {"uid": "uid-1", "allowed": True}
    assert "'tolerant' failed with an exception and will ignore it" in caplog.text
    assert "'tolerant2' failed with an exception and will ignore it" in caplog.text

    @kopf.on.validate("kopfexamples", registry=registry)
    def strict(**_: Any) -> None:
        raise AdmissionError("Strict.", code=403)

    response = await serve(registry, settings, make_review())
    assert response["response"]["status"] == {"code": 403, "message": "Strict."}


#
# Serving the reviews: mutation.
#


async def test_mutation_returns_a_json_patch(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.mutate("kopfexamples", registry=registry)
    def defaults(spec: Any, patch: kopf.Patch, **_: Any) -> None:
        if "numbers" not in spec:
            patch.spec["numbers"] = [1, 2, 3]

    response = await serve(registry, settings, make_review(spec={"field": "x"}))
    assert response["response"]["allowed"] is True
    assert decode_patch(response) == [{"op": "add", "path": "/spec/numbers", "value": [1, 2, 3]}]

    response = await serve(registry, settings, make_review())  # no spec at all
    assert decode_patch(response) == [{"op": "add", "path": "/spec", "value": {"numbers": [1, 2, 3]}}]

    response = await serve(registry, settings, make_review(spec={"numbers": [9]}))
    assert response["response"] == {"uid": "uid-1", "allowed": True}  # no patch when nothing changes.


async def test_mutations_of_several_handlers_are_combined(
    registry: OperatorRegistry, settings: OperatorSettings
) -> None:
    @kopf.on.mutate("kopfexamples", registry=registry)
    def converting(spec: Any, patch: kopf.Patch, **_: Any) -> None:
        patch.spec["numbers"] = [float(v) for v in spec["numbers"]]

    @kopf.on.mutate("kopfexamples", registry=registry)
    def labelling(patch: kopf.Patch, **_: Any) -> None:
        patch.meta.labels["checked"] = "yes"
        patch.spec["obsolete"] = None

    review = make_review(spec={"numbers": ["1", "2"], "obsolete": True}, labels={"a": "b"})
    response = await serve(registry, settings, review)
    assert sorted(decode_patch(response), key=lambda op: op["path"]) == [
        {"op": "add", "path": "/metadata/labels/checked", "value": "yes"},
        {"op": "replace", "path": "/spec/numbers", "value": [1.0, 2.0]},
        {"op": "remove", "path": "/spec/obsolete"},
    ]


async def test_no_patch_when_denied(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.mutate("kopfexamples", registry=registry)
    def defaults(patch: kopf.Patch, **_: Any) -> None:
        patch.spec["numbers"] = [1]
        raise AdmissionError("No.", code=400)

    response = await serve(registry, settings, make_review())
    assert "patch" not in response["response"]
    assert response["response"]["allowed"] is False


#
# Serving the reviews: the handlers' selection and kwargs.
#


async def test_webhook_id_selects_one_handler(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    calls: list[str] = []

    @kopf.on.validate("kopfexamples", registry=registry)
    def first(**_: Any) -> None:
        calls.append("first")

    @kopf.on.mutate("kopfexamples", registry=registry)
    def second(**_: Any) -> None:
        calls.append("second")

    await serve(registry, settings, make_review(), webhook="second")
    assert calls == ["second"]
    await serve(registry, settings, make_review())
    assert calls == ["second", "first", "second"]


async def test_unknown_webhook_id_or_resource_is_denied_with_404(
    registry: OperatorRegistry, settings: OperatorSettings
) -> None:
    @kopf.on.validate("kopfexamples", registry=registry)
    def check(**_: Any) -> None:
        pass

    response = await serve(registry, settings, make_review(), webhook="nonexistent")
    assert response["response"]["allowed"] is False
    assert response["response"]["status"]["code"] == 404
    assert "'nonexistent'" in response["response"]["status"]["message"]

    response = await serve(registry, settings, make_review(resource=("zzz.dev", "v1", "zzz")))
    assert response["response"]["allowed"] is False
    assert response["response"]["status"]["code"] == 404
    assert "'zzz.v1.zzz.dev'" in response["response"]["status"]["message"]


async def test_known_resources_are_preferred(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    seen: list[Resource] = []

    @kopf.on.validate("kex", registry=registry)  # by a short name: needs the discovered resource.
    def check(resource: Resource, **_: Any) -> None:
        seen.append(resource)

    response = await serve(registry, settings, make_review())
    assert response["response"]["status"]["code"] == 404
    response = await serve(registry, settings, make_review(), resources=[PODS, KEX])
    assert response["response"] == {"uid": "uid-1", "allowed": True}
    assert seen == [KEX]


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        ("CREATE", ["any", "create", "create-update"]),
        ("UPDATE", ["any", "create-update"]),
        ("DELETE", ["any", "delete"]),
        ("CONNECT", ["any"]),
    ],
)
async def test_operations_filter(
    registry: OperatorRegistry, settings: OperatorSettings, operation: str, expected: list[str]
) -> None:
    calls: list[str] = []
    obj = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex1"}}
    kopf.on.validate("kopfexamples", id="any", registry=registry)(lambda **_: calls.append("any"))
    kopf.on.validate("kopfexamples", id="create", operation="CREATE", registry=registry)(
        lambda **_: calls.append("create")
    )
    kopf.on.validate("kopfexamples", id="create-update", operations=["CREATE", "UPDATE"], registry=registry)(
        lambda **_: calls.append("create-update")
    )
    kopf.on.validate("kopfexamples", id="delete", operation="DELETE", registry=registry)(
        lambda **_: calls.append("delete")
    )
    review = make_review(
        operation, obj=None if operation == "DELETE" else obj, old=obj if operation in ("UPDATE", "DELETE") else None
    )
    await serve(registry, settings, review)
    assert calls == expected


@pytest.mark.parametrize(
    ("subresource", "expected"),
    [
        (None, ["main", "all"]),
        ("status", ["all", "status"]),
        ("scale", ["all"]),
    ],
)
async def test_subresource_filter(
    registry: OperatorRegistry, settings: OperatorSettings, subresource: str | None, expected: list[str]
) -> None:
    calls: list[tuple[str, str | None]] = []

    def make(name: str) -> Callable[..., None]:
        def fn(subresource: str | None, **_: Any) -> None:
            calls.append((name, subresource))

        return fn

    kopf.on.validate("kopfexamples", id="main", registry=registry)(make("main"))
    kopf.on.validate("kopfexamples", id="all", subresource="*", registry=registry)(make("all"))
    kopf.on.validate("kopfexamples", id="status", subresource="status", registry=registry)(make("status"))
    await serve(registry, settings, make_review(subresource=subresource))
    assert calls == [(name, subresource) for name in expected]


async def test_label_and_callback_filters(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    calls: list[str] = []
    kopf.on.validate("kopfexamples", id="labelled", labels={"app": "x"}, registry=registry)(
        lambda **_: calls.append("labelled")
    )
    kopf.on.validate("kopfexamples", id="present", labels={"app": kopf.PRESENT}, registry=registry)(
        lambda **_: calls.append("present")
    )
    kopf.on.validate("kopfexamples", id="valuecb", labels={"app": lambda value, **_: value == "y"}, registry=registry)(
        lambda **_: calls.append("valuecb")
    )
    kopf.on.validate(
        "kopfexamples",
        id="when",
        when=lambda spec, operation, dryrun, **_: spec.get("on") and operation == "CREATE" and not dryrun,
        registry=registry,
    )(lambda **_: calls.append("when"))

    await serve(registry, settings, make_review(labels={"app": "x"}))
    assert calls == ["labelled", "present"]
    calls.clear()
    await serve(registry, settings, make_review(labels={"app": "y"}, spec={"on": True}))
    assert calls == ["present", "valuecb", "when"]
    calls.clear()
    await serve(registry, settings, make_review(spec={"on": True}, dry_run=True))
    assert calls == []


async def test_kwargs_of_the_handlers(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    seen: dict[str, Any] = {}

    @kopf.on.validate("kopfexamples", param="p1", registry=registry)
    async def check(**kwargs: Any) -> None:
        seen.update(kwargs)

    review = make_review(
        "UPDATE",
        obj={"metadata": {"name": "kex1"}, "spec": {"a": 2}},
        old={"metadata": {"name": "kex1"}, "spec": {"a": 1}},
        dry_run=True,
    )
    headers = {"Authorization": "Bearer xyz"}
    sslpeer = {"subject": ((("commonName", "apiserver"),),)}
    await serve(registry, settings, review, headers=headers, sslpeer=sslpeer, indices={"idx": {"k": "v"}})
    assert seen["dryrun"] is True
    assert seen["userinfo"] == {"username": "admin", "uid": "admin-uid", "groups": ["system:masters"]}
    assert seen["headers"] == headers
    assert seen["sslpeer"] == sslpeer
    assert seen["operation"] == "UPDATE"
    assert seen["subresource"] is None
    assert seen["warnings"] == []
    assert seen["param"] == "p1"
    assert seen["idx"] == {"k": "v"}
    assert seen["resource"].plural == "kopfexamples"
    assert seen["name"] == "kex1"
    assert seen["spec"] == {"a": 2}
    assert seen["old"] == {"metadata": {"name": "kex1"}, "spec": {"a": 1}}
    assert seen["new"] == {"metadata": {"name": "kex1"}, "spec": {"a": 2}}
    assert list(seen["diff"]) == [("change", ("spec", "a"), 1, 2)]
    assert isinstance(seen["patch"], kopf.Patch)
    assert isinstance(seen["memo"], Memo)
    assert isinstance(seen["logger"], logging.LoggerAdapter)


async def test_deletion_sees_the_old_object(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    seen: dict[str, Any] = {}

    @kopf.on.validate("kopfexamples", operation="DELETE", registry=registry)
    def check(body: Any, old: Any, new: Any, **_: Any) -> None:
        seen.update(body=dict(body), old=old, new=new)

    old = {"metadata": {"name": "kex1"}, "spec": {"a": 1}}
    await serve(registry, settings, make_review("DELETE", old=old))
    assert seen == {"body": old, "old": old, "new": None}


async def test_memos_of_creations_are_discarded_and_of_known_objects_kept(
    registry: OperatorRegistry, settings: OperatorSettings
) -> None:
    memos: list[Any] = []

    @kopf.on.validate("kopfexamples", registry=registry)
    def check(memo: Any, **_: Any) -> None:
        memo.counter = memo.get("counter", 0) + 1
        memos.append(memo)

    memories = ResourceMemories()
    memobase = Memo(shared="yes")
    obj = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex1", "uid": "u1"}}
    for _ in range(2):
        await serve(registry, settings, make_review("CREATE", obj=obj), memories=memories, memobase=memobase)
    assert len(memories) == 0
    assert memos[0] is not memos[1]
    assert memos[0] == memos[1] == {"shared": "yes", "counter": 1}

    # Unknown to the operator (not yet seen by the reactor): throwaway memos, no memories created.
    await serve(registry, settings, make_review("UPDATE", obj=obj, old=obj), memories=memories, memobase=memobase)
    assert len(memories) == 0
    assert memos[2] == {"shared": "yes", "counter": 1}

    # Known to the operator: the object's own memo.
    memory = memories.recall(obj, memo=memobase)
    for _ in range(2):
        await serve(registry, settings, make_review("UPDATE", obj=obj, old=obj), memories=memories, memobase=memobase)
    assert memos[3] is memos[4] is memory.memo
    assert memos[4] == {"shared": "yes", "counter": 2}
    await serve(registry, settings, make_review("DELETE", old=obj), memories=memories, memobase=memobase)
    assert memos[5] is memory.memo
    assert memobase == {"shared": "yes"}


async def test_malformed_reviews_are_rejected(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    with pytest.raises(reviews.MalformedReviewError):
        await serve(registry, settings, {"kind": "Something"})


async def test_response_api_version_follows_the_request(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    kopf.on.validate("kopfexamples", registry=registry)(lambda **_: None)
    review = dict(make_review(), apiVersion="admission.k8s.io/v1beta1")
    response = await serve(registry, settings, review)
    assert response["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_in_process_handler_binds_the_webhook(registry: OperatorRegistry, settings: OperatorSettings) -> None:
    calls: list[str] = []
    kopf.on.validate("kopfexamples", id="a", registry=registry)(lambda **_: calls.append("a"))
    kopf.on.validate("kopfexamples", id="b", registry=registry)(lambda **_: calls.append("b"))
    handler = admission.in_process_handler(registry=registry, settings=settings, webhook="b")
    response = await handler(make_review())
    assert response["response"] == {"uid": "uid-1", "allowed": True}
    assert calls == ["b"]

    endpoints = admission.in_process_endpoints(
        registry=registry, settings=settings, client_config={"url": "https://hooks.local/root/"}
    )
    assert set(endpoints) == {"https://hooks.local/root/a", "https://hooks.local/root/b"}
    endpoints = admission.in_process_endpoints(
        registry=registry,
        settings=settings,
        client_config={"service": {"namespace": "ns", "name": "svc", "path": "/root"}},
    )
    assert set(endpoints) == {"service:ns/svc:443/root/a", "service:ns/svc:443/root/b"}


#
# Building the webhooks of the configurations.
#


def test_build_webhooks_full(registry: OperatorRegistry) -> None:
    kopf.on.validate("kopfexamples", id="check", registry=registry)(lambda **_: None)
    handlers = registry.webhooks.get_all_handlers()
    webhooks = admission.build_webhooks(
        handlers,
        [KEX, PODS],
        name_suffix="auto.kopf.dev",
        client_config={"url": "https://host:9443/root", "caBundle": "Q0E="},
    )
    assert webhooks == [
        {
            "name": "check.auto.kopf.dev",
            "clientConfig": {"url": "https://host:9443/root/check", "caBundle": "Q0E="},
            "rules": [
                {
                    "apiGroups": ["kopf.dev"],
                    "apiVersions": ["v1"],
                    "resources": ["kopfexamples"],
                    "operations": ["*"],
                    "scope": "*",
                }
            ],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 30,
            "admissionReviewVersions": ["v1", "v1beta1"],
        }
    ]


def test_build_webhooks_options(registry: OperatorRegistry) -> None:
    kopf.on.mutate(
        "kex",
        id="opts",
        operation="UPDATE",
        subresource="status",
        side_effects=True,
        ignore_failures=True,
        registry=registry,
    )(lambda **_: None)
    kopf.on.mutate(kopf.EVERYTHING, id="every", operations=["DELETE", "CREATE"], subresource="*", registry=registry)(
        lambda **_: None
    )
    handlers = registry.webhooks.get_all_handlers()
    webhooks = admission.build_webhooks(
        handlers,
        [KEX, PODS],
        name_suffix="x.y",
        client_config={"service": {"namespace": "ns", "name": "svc", "port": 443}},
    )
    assert [w["name"] for w in webhooks] == ["opts.x.y", "every.x.y"]
    opts, every = webhooks
    assert opts["sideEffects"] == "NoneOnDryRun"
    assert opts["failurePolicy"] == "Ignore"
    assert opts["clientConfig"] == {"service": {"namespace": "ns", "name": "svc", "port": 443, "path": "/opts"}}
    assert opts["rules"] == [
        {
            "apiGroups": ["kopf.dev"],
            "apiVersions": ["v1"],
            "resources": ["kopfexamples/status"],
            "operations": ["UPDATE"],
            "scope": "*",
        }
    ]
    assert every["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods", "pods/*"],
            "operations": ["CREATE", "DELETE"],
            "scope": "*",
        },
        {
            "apiGroups": ["kopf.dev"],
            "apiVersions": ["v1"],
            "resources": ["kopfexamples", "kopfexamples/*"],
            "operations": ["CREATE", "DELETE"],
            "scope": "*",
        },
    ]


def test_build_webhooks_object_selector_from_labels(registry: OperatorRegistry) -> None:
    kopf.on.validate(
        "kopfexamples",
        id="sel",
        registry=registry,
        labels={"app": "x", "tier": kopf.PRESENT, "legacy": kopf.ABSENT, "cb": lambda value, **_: True},
    )(lambda **_: None)
    kopf.on.validate("kopfexamples", id="nosel", registry=registry, labels={"cb": lambda value, **_: True})(
        lambda **_: None
    )
    webhooks = admission.build_webhooks(
        registry.webhooks.get_all_handlers(), [KEX], name_suffix="a.b", client_config={"url": "https://h"}
    )
    assert webhooks[0]["objectSelector"] == {
        "matchLabels": {"app": "x"},
        "matchExpressions": [{"key": "tier", "operator": "Exists"}, {"key": "legacy", "operator": "DoesNotExist"}],
    }
    assert "objectSelector" not in webhooks[1]


def test_build_webhooks_skips_unserved_and_non_persistent(registry: OperatorRegistry) -> None:
    kopf.on.validate("kopfexamples", id="kept", persistent=True, registry=registry)(lambda **_: None)
    kopf.on.validate("kopfexamples", id="gone", registry=registry)(lambda **_: None)
    kopf.on.validate("zzz.dev", "v1", "zzz", id="unserved", registry=registry)(lambda **_: None)
    handlers = registry.webhooks.get_all_handlers()
    all_hooks = admission.build_webhooks(handlers, [KEX], name_suffix="a.b", client_config={"url": "https://h"})
    assert [w["name"] for w in all_hooks] == ["kept.a.b", "gone.a.b"]
    persistent = admission.build_webhooks(
        handlers, [KEX], name_suffix="a.b", client_config={"url": "https://h"}, persistent_only=True
    )
    assert [w["name"] for w in persistent] == ["kept.a.b"]


def test_webhook_names_are_disambiguated(registry: OperatorRegistry) -> None:
    kopf.on.validate("kopfexamples", id="a_b", registry=registry)(lambda **_: None)
    kopf.on.validate("kopfexamples", id="a-b", registry=registry)(lambda **_: None)
    webhooks = admission.build_webhooks(
        registry.webhooks.get_all_handlers(), [KEX], name_suffix="x.y", client_config={"url": "https://h"}
    )
    names = [w["name"] for w in webhooks]
    assert names[0] == "a-b.x.y"
    assert names[1].startswith("a-b-") and names[1].endswith(".x.y") and len(set(names)) == 2
    assert [w["clientConfig"]["url"] for w in webhooks] == ["https://h/a_b", "https://h/a-b"]


def test_webhook_names_and_urls_of_unusual_ids() -> None:
    assert admission.build_webhook_name("validate1", "auto.kopf.dev") == "validate1.auto.kopf.dev"
    assert admission.build_webhook_name("check_numbers", "auto.kopf.dev") == "check-numbers.auto.kopf.dev"
    assert admission.build_webhook_name("Mod.Fn", "a.b") == "mod.fn.a.b"
    config = admission.inject_handler_id({"url": "https://h:1/r"}, "a b/c")
    assert config == {"url": "https://h:1/r/a%20b%2Fc"}


#
# End to end: the managed configurations, the webhook server, the simulated apiserver.
#


@pytest.fixture
def crds() -> list[dict[str, Any]]:
    """The simulated apiserver (the shared ``cluster`` & ``server`` fixtures) serves the example resource."""
    return [CRD]


@pytest.fixture
def operator_registry() -> OperatorRegistry:
    """An operator with validating & mutating handlers, persistent & not."""
    registry = OperatorRegistry()

    @kopf.on.validate("kopfexamples", registry=registry)
    def check_field(spec: Any, warnings: list[str], **_: Any) -> None:
        if spec.get("field") == "bad":
            raise AdmissionError("The field must not be bad.", code=400)
        warnings.append("Checked by the operator.")

    @kopf.on.validate("kopfexamples", id="audit", persistent=True, operation="DELETE", registry=registry)
    def audit(**_: Any) -> None:
        pass

    @kopf.on.mutate("kopfexamples", registry=registry)
    def defaults(spec: Any, patch: kopf.Patch, **_: Any) -> None:
        if "numbers" not in spec:
            patch.spec["numbers"] = [1, 2, 3]

    return registry


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


#
# Bad input to the served webhooks: clear 4xx, and the server keeps serving.
#


async def test_bad_input_to_the_server(settings: OperatorSettings, operator_registry: OperatorRegistry) -> None:
    class SmallServer(WebhookServer):
        MAX_BODY_SIZE = 4096

    fn = admission.make_webhook_fn(registry=operator_registry, settings=settings, resources=[KEX])
    server = SmallServer(addr="127.0.0.1", port=0, insecure=True)
    async with server:
        configs = server(fn)
        config = await anext(configs)
        base = config.get("url")
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{base}/check_field", data=b"{not json") as response:
                assert response.status == 400
                assert "not valid JSON" in (await response.json())["message"]
            async with session.post(f"{base}/check_field", json={"kind": "Pod"}) as response:
                assert response.status == 422
                assert "not an admission review" in (await response.json())["message"]
            async with session.post(f"{base}/check_field", data=b"x" * 10000) as response:
                assert response.status == 413
            review = make_review(resource=("zzz.dev", "v1", "zzz"))
            async with session.post(f"{base}/check_field", json=review) as response:
                assert response.status == 200
                payload = await response.json()
                assert payload["response"]["allowed"] is False
                assert payload["response"]["status"]["code"] == 404
            async with session.post(f"{base}/nonexistent", json=make_review()) as response:
                assert (await response.json())["response"]["status"]["code"] == 404

            # Still serving:
            async with session.post(f"{base}/check_field", json=make_review(spec={"field": "bad"})) as response:
                assert response.status == 200
                payload = await response.json()
                assert payload["response"] == {
                    "uid": "uid-1",
                    "allowed": False,
                    "status": {"code": 400, "message": "The field must not be bad."},
                }
            async with session.post(f"{base}/defaults", json=make_review(spec={})) as response:
                payload = await response.json()
                assert payload["response"]["allowed"] is True
                assert decode_patch(payload) == [{"op": "add", "path": "/spec/numbers", "value": [1, 2, 3]}]


def test_webhook_types_are_split_into_configurations(operator_registry: OperatorRegistry) -> None:
    types = {handler.id: handler.type for handler in operator_registry.webhooks.get_all_handlers()}
    assert types == {
        "check_field": WebhookType.VALIDATING,
        "audit": WebhookType.VALIDATING,
        "defaults": WebhookType.MUTATING,
    }


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
