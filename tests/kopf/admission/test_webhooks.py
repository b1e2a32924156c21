"""Building the webhooks of the managed configurations; bad input to the served webhooks."""

from __future__ import annotations

import aiohttp

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.engines import admission
from kopf._core.intents.causes import WebhookType
from kopf._core.intents.registries import OperatorRegistry
from kopf._kits.webhooks import WebhookServer

from .helpers import (
    KEX,
    PODS,
    decode_patch,
    make_review,
)

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
