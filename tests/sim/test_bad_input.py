"""Bad input gets the apiserver's 4xx Status, changes nothing in the store, and the server keeps serving."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"
JSON_HEADERS = {"Content-Type": "application/json"}


def snapshot(cluster: Cluster) -> tuple[int, str]:
    state = {f"{k[0]}/{k[1]}": list(cluster.objects(k)) for k in sorted({t.storage_key for t in cluster.catalogue})}
    return cluster.rv, json.dumps(state, sort_keys=True)


async def expect_failure(
    client: aiohttp.ClientSession,
    cluster: Cluster,
    method: str,
    url: str,
    *,
    code: int,
    reason: str,
    message: str,
    data: bytes | str | None = None,
    headers: dict[str, str] | None = None,
    exact: bool = True,
) -> dict[str, Any]:
    before = snapshot(cluster)
    async with client.request(method, url, data=data, headers=headers or JSON_HEADERS) as response:
        status = await response.json()
        assert response.status == code, status
    assert status["kind"] == "Status"
    assert status["status"] == "Failure"
    assert status["code"] == code
    assert status["reason"] == reason
    if exact:
        assert status["message"] == message
    else:
        assert status["message"].startswith(message), status["message"]
    assert snapshot(cluster) == before
    async with client.get("/api/v1/namespaces/default") as response:  # still serving
        assert response.status == 200
    return status


@pytest.fixture
async def existing(client: aiohttp.ClientSession) -> dict[str, Any]:
    async with client.post(WIDGETS, json=widget("w1", size=1)) as response:
        assert response.status == 201
        return dict(await response.json())


async def test_malformed_json_on_create(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        WIDGETS,
        data=b'{"apiVersion": "acme.example/v1", ',
        code=400,
        reason="BadRequest",
        exact=False,
        message="the object provided is unrecognized (must be of type Widget): "
        "couldn't get version/kind; json parse error: ",
    )


async def test_malformed_json_patch(
    client: aiohttp.ClientSession, crd_cluster: Cluster, existing: dict[str, Any]
) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "PATCH",
        f"{WIDGETS}/w1",
        data=b"{not json",
        headers={"Content-Type": "application/merge-patch+json"},
        code=400,
        reason="BadRequest",
        message="error decoding patch: ",
        exact=False,
    )


async def test_malformed_yaml_on_apply(
    client: aiohttp.ClientSession, crd_cluster: Cluster, existing: dict[str, Any]
) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "PATCH",
        f"{WIDGETS}/w1?fieldManager=me",
        data="kind: [unclosed\n  - : :",
        headers={"Content-Type": "application/apply-patch+yaml"},
        code=400,
        reason="BadRequest",
        message="error decoding YAML: ",
        exact=False,
    )


async def test_malformed_yaml_on_create(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        WIDGETS,
        data="metadata: {name: [x",
        headers={"Content-Type": "application/yaml"},
        code=400,
        reason="BadRequest",
        message="error decoding YAML: ",
        exact=False,
    )


async def test_unknown_patch_content_type(
    client: aiohttp.ClientSession, crd_cluster: Cluster, existing: dict[str, Any]
) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "PATCH",
        f"{WIDGETS}/w1",
        data=b"{}",
        headers={"Content-Type": "application/x-unknown-patch"},
        code=415,
        reason="UnsupportedMediaType",
        message="the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml, application/strategic-merge-patch+json",
    )


async def test_strategic_merge_patch_on_custom_resource(
    client: aiohttp.ClientSession, crd_cluster: Cluster, existing: dict[str, Any]
) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "PATCH",
        f"{WIDGETS}/w1",
        data=b'{"spec": {"size": 2}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
        code=415,
        reason="UnsupportedMediaType",
        message="the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml",
    )


async def test_kind_disagrees_with_url(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    body = {"apiVersion": "acme.example/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        WIDGETS,
        data=json.dumps(body),
        code=400,
        reason="BadRequest",
        message="the kind in the data (Gadget) does not match the expected kind (Widget)",
    )


async def test_api_version_disagrees_with_url(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        WIDGETS,
        data=json.dumps(body),
        code=400,
        reason="BadRequest",
        message="the API version in the data (v1) does not match the expected API version (acme.example/v1)",
    )


async def test_namespace_disagrees_with_url(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        WIDGETS,
        data=json.dumps(widget("w2", namespace="other")),
        code=400,
        reason="BadRequest",
        message="the namespace of the provided object does not match the namespace sent on the request",
    )


async def test_name_disagrees_with_url_on_update(
    client: aiohttp.ClientSession, crd_cluster: Cluster, existing: dict[str, Any]
) -> None:
    body = dict(existing, metadata={**existing["metadata"], "name": "other"})
    await expect_failure(
        client,
        crd_cluster,
        "PUT",
        f"{WIDGETS}/w1",
        data=json.dumps(body),
        code=400,
        reason="BadRequest",
        message="the name of the object (other) does not match the name on the URL (w1)",
    )


@pytest.mark.parametrize("name", ["Bad_Name", "-leading", "trailing-", "UPPER", "a" * 254])
async def test_invalid_names(client: aiohttp.ClientSession, crd_cluster: Cluster, name: str) -> None:
    status = await expect_failure(
        client,
        crd_cluster,
        "POST",
        WIDGETS,
        data=json.dumps(widget(name)),
        code=422,
        reason="Invalid",
        exact=False,
        message=f'Widget.acme.example "{name}" is invalid: metadata.name: Invalid value: "{name}": ',
    )
    assert status["details"]["causes"][0]["field"] == "metadata.name"


async def test_invalid_namespace_name_is_an_rfc1123_label(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "has.dots"}}
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        "/api/v1/namespaces",
        data=json.dumps(body),
        code=422,
        reason="Invalid",
        exact=False,
        message='Namespace "has.dots" is invalid: metadata.name: Invalid value: "has.dots": '
        "a lowercase RFC 1123 label must consist of",
    )


async def test_missing_name(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=json.dumps(body),
        code=422,
        reason="Invalid",
        message='ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
    )


async def test_object_over_the_storage_limit(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"x": "a" * 1_600_000}}
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=json.dumps(body),
        code=413,
        reason="RequestEntityTooLarge",
        message="etcdserver: request is too large",
    )


async def test_request_body_over_the_limit(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"}, "data": {"x": "a" * 3_200_000}}
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=json.dumps(body),
        code=413,
        reason="RequestEntityTooLarge",
        message="Request entity too large: limit is 3145728",
    )


async def test_schema_violation(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    status = await expect_failure(
        client,
        crd_cluster,
        "POST",
        WIDGETS,
        data=json.dumps(widget("w3", size="big")),
        code=422,
        reason="Invalid",
        message='Widget.acme.example "w3" is invalid: spec.size: Invalid value: "string": '
        'spec.size in body must be of type integer: "string"',
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTypeInvalid",
            "field": "spec.size",
            "message": 'Invalid value: "string": spec.size in body must be of type integer: "string"',
        }
    ]


async def test_unknown_field_with_strict_validation(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        f"{WIDGETS}?fieldValidation=Strict",
        data=json.dumps(widget("w4", bogus=1)),
        code=400,
        reason="BadRequest",
        message='Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "spec.bogus"',
    )


async def test_bad_label_selector(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "GET",
        f"{WIDGETS}?labelSelector=a%20in%20(",
        code=400,
        reason="BadRequest",
        message="unable to parse requirement: ",
        exact=False,
    )


async def test_unsupported_field_selector(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "GET",
        f"{WIDGETS}?fieldSelector=spec.size%3D1",
        code=400,
        reason="BadRequest",
        message="field label not supported: spec.size",
    )


async def test_create_in_missing_namespace(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        "/apis/acme.example/v1/namespaces/nowhere/widgets",
        data=json.dumps(widget("w5", namespace="nowhere")),
        code=404,
        reason="NotFound",
        message='namespaces "nowhere" not found',
    )


async def test_unknown_resource_path(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "GET",
        "/apis/acme.example/v1/namespaces/default/gadgets",
        code=404,
        reason="NotFound",
        message="the server could not find the requested resource",
    )


async def test_bad_dry_run_value(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    await expect_failure(
        client,
        crd_cluster,
        "POST",
        f"{WIDGETS}?dryRun=Some",
        data=json.dumps(widget("w6")),
        code=422,
        reason="Invalid",
        message='CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: '
        'supported values: "All"',
    )


async def test_json_patch_that_fails_its_test(
    client: aiohttp.ClientSession, crd_cluster: Cluster, existing: dict[str, Any]
) -> None:
    patch = [{"op": "test", "path": "/spec/size", "value": 99}, {"op": "replace", "path": "/spec/size", "value": 2}]
    await expect_failure(
        client,
        crd_cluster,
        "PATCH",
        f"{WIDGETS}/w1",
        data=json.dumps(patch),
        headers={"Content-Type": "application/json-patch+json"},
        code=422,
        reason="Invalid",
        message="",
        exact=False,
    )
