"""``/openapi/v2``: the Swagger 2.0 document (JSON, and the protobuf that kubectl asks for)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import yaml

from kopf_sim.http.protobuf import wire_fields
from kopf_sim.http.swagger import to_v2_schema
from kopf_sim.http.swagger_proto import CONTENT_TYPE

PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


async def fetch(client: aiohttp.ClientSession, accept: str = "application/json") -> tuple[str, bytes]:
    async with client.get("/openapi/v2", headers={"Accept": accept}) as response:
        assert response.status == 200
        return response.headers["Content-Type"], await response.read()


async def test_the_json_document(client: aiohttp.ClientSession) -> None:
    content_type, body = await fetch(client)
    assert content_type == "application/json"
    doc = json.loads(body)
    assert doc["swagger"] == "2.0"
    assert doc["info"] == {"title": "Kubernetes", "version": "v1.32.0"}
    deployment = doc["definitions"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert "properties" not in deployment  # open: the simulator does not know all the fields of built-ins
    widget = doc["definitions"]["example.acme.v1.Widget"]  # the CRD of the test cluster
    assert widget["properties"]["spec"]["properties"]["size"] == {"type": "integer", "minimum": 0}
    assert widget["properties"]["metadata"] == {
        "description": "Standard object's metadata.",
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    }
    assert "properties" not in widget["properties"]["status"]  # x-kubernetes-preserve-unknown-fields
    get = doc["paths"]["/apis/acme.example/v1/namespaces/{namespace}/widgets/{name}"]["get"]
    assert get["operationId"] == "readAcmeExampleV1NamespacedWidget"
    assert get["responses"]["200"]["schema"] == {"$ref": "#/definitions/example.acme.v1.Widget"}
    patch = doc["paths"]["/apis/acme.example/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["parameters"][0]["in"] == "body"
    assert "application/merge-patch+json" in patch["consumes"]
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])


def test_v3_only_keywords_are_left_out() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "note": {"type": "string", "nullable": True},
            "ref": {"allOf": [{"$ref": "#/components/schemas/X"}], "description": "An X."},
            "open": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"a": {"type": "string"}},
                "required": ["a"],
            },
        },
    }
    assert to_v2_schema(schema)["properties"] == {
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string"},
        "ref": {"description": "An X.", "$ref": "#/definitions/X"},
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }


def fields(data: bytes) -> dict[int, list[Any]]:
    result: dict[int, list[Any]] = {}
    for number, _, value in wire_fields(data):
        result.setdefault(number, []).append(value)
    return result


async def test_the_protobuf_document_for_kubectl(client: aiohttp.ClientSession) -> None:
    content_type, body = await fetch(client, PROTOBUF)
    assert content_type == CONTENT_TYPE
    document = fields(body)
    assert document[1] == [b"2.0"]
    assert fields(document[2][0]) == {1: [b"Kubernetes"], 2: [b"v1.32.0"]}
    definitions = {}
    for named in fields(document[9][0])[1]:
        entry = fields(named)
        definitions[entry[1][0].decode()] = fields(entry[2][0])
    widget = definitions["example.acme.v1.Widget"]
    assert fields(widget[22][0]) == {1: [b"object"]}  # type: TypeItem
    [extension] = [fields(e) for e in widget[31]]
    assert extension[1] == [b"x-kubernetes-group-version-kind"]
    assert yaml.safe_load(fields(extension[2][0])[2][0]) == [
        {"group": "acme.example", "kind": "Widget", "version": "v1"}
    ]
    properties = {fields(p)[1][0].decode(): fields(fields(p)[2][0]) for p in fields(widget[25][0])[1]}
    assert properties["metadata"][1] == [b"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    assert len(fields(document[8][0])[2]) > 20  # the paths


async def test_the_document_follows_the_crds(client: aiohttp.ClientSession) -> None:
    _, before = await fetch(client)
    async with client.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.acme.example") as r:
        assert r.status == 200
    _, after = await fetch(client)
    assert b"example.acme.v1.Widget" in before
    assert b"example.acme.v1.Widget" not in after
