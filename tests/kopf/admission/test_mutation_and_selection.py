"""Serving the reviews by the mutating handlers, and which handlers a review selects with which kwargs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import reviews
from kopf._cogs.structs.ephemera import Memo
from kopf._cogs.structs.references import Resource
from kopf._core.engines import admission
from kopf._core.engines.admission_errors import AdmissionError
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.memories import ResourceMemories

from .helpers import (
    KEX,
    PODS,
    decode_patch,
    make_review,
    serve,
)

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
