"""Bad options of writes (dryRun, fieldValidation, fieldManager, force, propagationPolicy) are 422 Invalid.

The apiserver validates the decoded CreateOptions, UpdateOptions, PatchOptions or DeleteOptions before
anything else, and names the options object in the message; nothing is changed.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from kopf_sim.store.cluster import Cluster

from .test_bad_input import snapshot

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
BODY = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


@pytest.fixture
async def existing(client: aiohttp.ClientSession) -> None:
    async with client.post(CONFIGMAPS, data=BODY, headers={"Content-Type": "application/json"}) as response:
        assert response.status == 201


@pytest.mark.usefixtures("existing")
@pytest.mark.parametrize(
    ("method", "query", "content_type", "message", "causes"),
    [
        (
            "POST",
            "?dryRun=Some",
            "application/json",
            'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: '
            'supported values: "All"',
            [("FieldValueNotSupported", "dryRun")],
        ),
        (
            "POST",
            "?fieldValidation=Bogus",
            "application/json",
            'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": '
            'supported values: "", "Ignore", "Strict", "Warn"',
            [("FieldValueNotSupported", "fieldValidation")],
        ),
        (
            "POST",
            "?fieldManager=%01x",
            "application/json",
            'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "\\x01x": '
            "invalid character U+0001 (at position 0)",
            [("FieldValueInvalid", "fieldManager")],
        ),
        (
            "PUT",
            f"?fieldManager={'m' * 129}&dryRun=All&dryRun=Nope",
            "application/json",
            'UpdateOptions.meta.k8s.io "" is invalid: [fieldManager: Too long: may not be more than 128 bytes, '
            'dryRun: Unsupported value: []string{"All", "Nope"}: supported values: "All"]',
            [("FieldValueTooLong", "fieldManager"), ("FieldValueNotSupported", "dryRun")],
        ),
        (
            "PATCH",
            "?force=true",
            MERGE,
            'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
            [("FieldValueForbidden", "force")],
        ),
        (
            "PATCH",
            "",
            APPLY,
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            [("FieldValueRequired", "fieldManager")],
        ),
        (
            "DELETE",
            "?propagationPolicy=Nope",
            "application/json",
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Nope": '
            'supported values: "Foreground", "Background", "Orphan", "nil"',
            [("FieldValueNotSupported", "propagationPolicy")],
        ),
        (
            "DELETE",
            "?propagationPolicy=Orphan&orphanDependents=true",
            "application/json",
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": '
            "orphanDependents and deletionPropagation cannot be both set",
            [("FieldValueInvalid", "propagationPolicy")],
        ),
    ],
)
async def test_bad_options_are_invalid(
    client: aiohttp.ClientSession,
    crd_cluster: Cluster,
    method: str,
    query: str,
    content_type: str,
    message: str,
    causes: list[tuple[str, str]],
) -> None:
    url = CONFIGMAPS + query if method == "POST" else f"{CONFIGMAPS}/cm{query}"
    data = None if method == "DELETE" else (BODY if method != "PATCH" else json.dumps({"data": {"a": "b"}}))
    before = snapshot(crd_cluster)
    async with client.request(method, url, data=data, headers={"Content-Type": content_type}) as response:
        status: dict[str, Any] = await response.json()
    assert (response.status, status["reason"], status["message"]) == (422, "Invalid", message)
    assert status["details"]["group"] == "meta.k8s.io"
    assert "name" not in status["details"]
    assert [(c["reason"], c["field"]) for c in status["details"]["causes"]] == causes
    assert snapshot(crd_cluster) == before


async def test_a_delete_options_body_is_checked_too(client: aiohttp.ClientSession, existing: None) -> None:
    body = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["Maybe"]})
    async with client.delete(f"{CONFIGMAPS}/cm", data=body) as response:
        status = await response.json()
    assert response.status == 422
    assert status["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Maybe"}: supported values: "All"'
    )
