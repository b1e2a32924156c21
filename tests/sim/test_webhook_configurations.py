"""Webhook configurations (``admissionregistration.k8s.io/v1``) are defaulted and validated as the apiserver does."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

Config = dict[str, Any]
CONFIGS = "/apis/admissionregistration.k8s.io/v1"


def webhook(**fields: Any) -> Config:
    hook: Config = {
        "name": "check.acme.example",
        "clientConfig": {"url": "https://hooks.example/check"},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
    }
    for key, value in fields.items():
        if value is None:
            hook.pop(key, None)
        else:
            hook[key] = value
    return hook


def configuration(*hooks: Config, kind: str = "Validating", name: str = "config") -> Config:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }


async def create(client: aiohttp.ClientSession, config: Config) -> tuple[int, Config]:
    plural = config["kind"].lower() + "s"
    async with client.post(f"{CONFIGS}/{plural}", json=config) as response:
        return response.status, await response.json()


async def causes_of(client: aiohttp.ClientSession, *hooks: Config, kind: str = "Validating") -> list[str]:
    status, body = await create(client, configuration(*hooks, kind=kind))
    assert status == 422, body
    assert body["reason"] == "Invalid" and body["details"]["kind"] == f"{kind}WebhookConfiguration"
    return [f"{cause['field']}: {cause['message']}" for cause in body["details"]["causes"]]


async def test_defaults_are_stored_and_served(client: aiohttp.ClientSession) -> None:
    service = {"namespace": "default", "name": "hooks", "path": "/check"}
    status, created = await create(client, configuration(webhook(clientConfig={"service": service}), kind="Mutating"))
    assert status == 201, created
    (hook,) = created["webhooks"]
    assert hook["failurePolicy"] == "Fail"
    assert hook["matchPolicy"] == "Equivalent"
    assert hook["namespaceSelector"] == {} and hook["objectSelector"] == {}
    assert hook["timeoutSeconds"] == 10
    assert hook["reinvocationPolicy"] == "Never"
    assert hook["rules"][0]["scope"] == "*"
    assert hook["clientConfig"]["service"]["port"] == 443
    async with client.get(f"{CONFIGS}/mutatingwebhookconfigurations/config") as response:
        assert (await response.json())["webhooks"] == created["webhooks"]


async def test_validating_webhooks_have_no_reinvocation_policy(client: aiohttp.ClientSession) -> None:
    status, created = await create(client, configuration(webhook()))
    assert status == 201 and "reinvocationPolicy" not in created["webhooks"][0]


async def test_what_the_issue_found_stored_is_refused(client: aiohttp.ClientSession) -> None:
    causes = await causes_of(
        client,
        webhook(
            sideEffects="Unknown",
            clientConfig={"url": "http://hooks.example/check"},
            timeoutSeconds=60,
            admissionReviewVersions=None,
            failurePolicy="Maybe",
        ),
        webhook(),
    )
    assert causes == [
        'webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"',
        'webhooks[0].sideEffects: Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"',
        "webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; "
        "desired format: https://host[/path]",
        "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        'webhooks[1].name: Duplicate value: "check.acme.example"',
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"name": "check"},
            (
                'webhooks[0].name: Invalid value: "check": should be a domain with at '
                "least three segments separated by dots"
            ),
        ),
        (
            {"name": "Check.Acme.example"},
            'webhooks[0].name: Invalid value: "Check.Acme.example": a lowercase RFC 1123 subdomain',
        ),
        ({"name": None}, "webhooks[0].name: Required value"),
        ({"sideEffects": None}, "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"),
        (
            {"timeoutSeconds": 0},
            "webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds",
        ),
        (
            {"matchPolicy": "Fuzzy"},
            'webhooks[0].matchPolicy: Unsupported value: "Fuzzy": supported values: "Equivalent", "Exact"',
        ),
        (
            {"admissionReviewVersions": ["v2"]},
            'webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1',
        ),
        (
            {"admissionReviewVersions": ["v1", "v1"]},
            'webhooks[0].admissionReviewVersions[1]: Invalid value: "v1": duplicate version',
        ),
        ({"clientConfig": {}}, "webhooks[0].clientConfig: Required value: exactly one of url or service is required"),
        (
            {"clientConfig": {"url": "https://u:p@hooks.example/x"}},
            'webhooks[0].clientConfig.url: Invalid value: "u:p": user information is not permitted in the URL',
        ),
        (
            {"clientConfig": {"url": "https://hooks.example/x?a=1"}},
            'webhooks[0].clientConfig.url: Invalid value: "a=1": query parameters are not permitted in the URL',
        ),
        (
            {"clientConfig": {"url": "https://hooks.example/x#top"}},
            'webhooks[0].clientConfig.url: Invalid value: "top": fragments are not permitted in the URL',
        ),
        (
            {"clientConfig": {"service": {"namespace": "default"}}},
            "webhooks[0].clientConfig.service.name: Required value: service name is required",
        ),
        (
            {"clientConfig": {"service": {"namespace": "d", "name": "s", "port": 0}}},
            (
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: "
                "must be between 1 and 65535, inclusive"
            ),
        ),
        (
            {"clientConfig": {"service": {"namespace": "d", "name": "s", "path": "check"}}},
            "webhooks[0].clientConfig.service.path: Invalid value: \"check\": must start with a '/'",
        ),
        (
            {"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
            "webhooks[0].rules[0].operations: Required value",
        ),
        (
            {"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["PATCH"], "resources": ["pods"]}]},
            (
                'webhooks[0].rules[0].operations[0]: Unsupported value: "PATCH": supported values: '
                '"*", "CONNECT", "CREATE", "DELETE", "UPDATE"'
            ),
        ),
        (
            {
                "rules": [
                    {"apiGroups": ["*", "apps"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["pods"]}
                ]
            },
            (
                'webhooks[0].rules[0].apiGroups: Invalid value: ["*","apps"]: if \'*\' is '
                "present, must not specify other API groups"
            ),
        ),
        (
            {"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["*/*", "pods"]}]},
            (
                'webhooks[0].rules[0].resources: Invalid value: ["*/*","pods"]: if \'*/*\' is '
                "present, must not specify other resources"
            ),
        ),
        (
            {
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["*"],
                        "resources": ["pods"],
                        "scope": "Everywhere",
                    }
                ]
            },
            (
                'webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported '
                'values: "*", "Cluster", "Namespaced"'
            ),
        ),
        (
            {"objectSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
            (
                "webhooks[0].objectSelector.matchExpressions[0].operator: Invalid value: "
                '"Near": not a valid selector operator'
            ),
        ),
        (
            {"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
            (
                "webhooks[0].namespaceSelector.matchExpressions[0].values: Required value: must be "
                "specified when `operator` is 'In' or 'NotIn'"
            ),
        ),
    ],
)
async def test_each_rule_of_the_validation(client: aiohttp.ClientSession, fields: Config, expected: str) -> None:
    causes = await causes_of(client, webhook(**fields))
    assert any(cause.startswith(expected) for cause in causes), causes


async def test_the_reinvocation_policy_of_mutating_webhooks(client: aiohttp.ClientSession) -> None:
    causes = await causes_of(client, webhook(reinvocationPolicy="Always"), kind="Mutating")
    assert causes == [
        'webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"'
    ]


async def test_values_of_the_wrong_type_do_not_decode(client: aiohttp.ClientSession) -> None:
    status, body = await create(client, configuration(webhook(timeoutSeconds="10")))
    assert status == 400
    assert body["message"].endswith(
        "json: cannot unmarshal string into Go struct field ValidatingWebhook.webhooks.timeoutSeconds of type int32"
    )


async def test_an_update_is_validated_and_defaulted_too(client: aiohttp.ClientSession) -> None:
    status, created = await create(client, configuration(webhook()))
    assert status == 201
    created["webhooks"][0] = webhook(failurePolicy="Ignore")  # the other defaults left out: filled in again
    async with client.put(f"{CONFIGS}/validatingwebhookconfigurations/config", json=created) as response:
        updated = await response.json()
        assert response.status == 200, updated
    assert updated["webhooks"][0]["failurePolicy"] == "Ignore" and updated["webhooks"][0]["timeoutSeconds"] == 10
    updated["webhooks"][0]["timeoutSeconds"] = 31
    async with client.put(f"{CONFIGS}/validatingwebhookconfigurations/config", json=updated) as response:
        assert response.status == 422
