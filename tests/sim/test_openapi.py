"""The OpenAPI v3 documents: what kubectl explain, kubectl's validation detection and SMP read in them."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kopf_sim.http.openapi import ServedKind, gv_path, openapi_group_version, openapi_index, schema_name

CRD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "description": "The desired state.",
            "properties": {"replicas": {"type": "integer", "description": "How many."}},
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
NAMESPACE = ServedKind(
    "", "v1", "Namespace", "namespaces", False, None, {("spec", "finalizers"): (None, "merge")}, ("status",)
)
POD = ServedKind(
    "",
    "v1",
    "Pod",
    "pods",
    True,
    None,
    {
        ("spec", "containers"): ("name", "merge"),
        ("spec", "containers", "env"): ("name", "merge"),
        ("spec", "volumes"): ("name", "merge,retainKeys"),
        ("metadata", "ownerReferences"): ("uid", "merge"),
    },
    ("status",),
)
DEPLOYMENT = ServedKind(
    "apps",
    "v1",
    "Deployment",
    "deployments",
    True,
    None,
    {
        ("spec", "template", "spec", "containers"): ("name", "merge"),
        ("spec", "strategy"): (None, "retainKeys"),
    },
    ("status", "scale"),
)
CRD = ServedKind(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, None, {}, ("status",)
)
EXAMPLE = ServedKind(
    "kopf.dev",
    "v1",
    "KopfExample",
    "kopfexamples",
    True,
    CRD_SCHEMA,
    {},
    ("status",),
    description="An example resource.",
)
KINDS = [NAMESPACE, POD, DEPLOYMENT, CRD, EXAMPLE]


def doc_of(kind: ServedKind, kinds: list[ServedKind] = KINDS) -> dict[str, Any]:
    doc = openapi_group_version(kinds, kind.group, kind.version)
    assert doc is not None
    return doc


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for verb, op in item.items():
            if verb != "parameters":
                yield path, verb, op


def schema_by_gvk(doc: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    """What kubectl explain does: find the component whose x-kubernetes-group-version-kind matches."""
    wanted = {"group": group, "version": version, "kind": kind}
    found: list[dict[str, Any]] = [
        s for s in doc["components"]["schemas"].values() if wanted in s.get("x-kubernetes-group-version-kind", [])
    ]
    assert len(found) == 1
    return found[0]


def supports_field_validation(
    kinds: list[ServedKind], group: str, version: str, kind: str, *, is_crd: bool = False
) -> bool:
    """What kubectl 1.32 checks before ``?fieldValidation=Strict`` (else it validates client-side).

    The PATCH operation with the kind's x-kubernetes-group-version-kind must list a query parameter
    ``fieldValidation`` among its own parameters (path-level ones do not count). A CRD whose
    group-version is missing from the index is checked via core/v1 Namespace instead.
    """
    index = openapi_index(kinds)
    if gv_path(group, version) not in index["paths"]:
        if not is_crd:
            return False
        group, version, kind = "", "v1", "Namespace"
    doc = openapi_group_version(kinds, group, version)
    assert doc is not None
    for _, verb, op in operations(doc):
        if verb == "patch" and op["x-kubernetes-group-version-kind"] == {
            "group": group,
            "version": version,
            "kind": kind,
        }:
            return any(p["name"] == "fieldValidation" and p["in"] == "query" for p in op["parameters"])
    return False


# --- the index -------------------------------------------------------------------------------------


def test_index_lists_each_group_version_with_a_content_hash() -> None:
    index = openapi_index(KINDS)
    assert sorted(index["paths"]) == ["api/v1", "apis/apiextensions.k8s.io/v1", "apis/apps/v1", "apis/kopf.dev/v1"]
    for key, entry in index["paths"].items():
        pattern = rf"/openapi/v3/{re.escape(key)}\?hash=[0-9A-F]{{128}}"
        assert re.fullmatch(pattern, entry["serverRelativeURL"])


def test_index_hash_is_stable_and_changes_with_the_schema() -> None:
    url = openapi_index(KINDS)["paths"]["apis/kopf.dev/v1"]["serverRelativeURL"]
    assert openapi_index(list(KINDS))["paths"]["apis/kopf.dev/v1"]["serverRelativeURL"] == url
    changed_schema = copy.deepcopy(CRD_SCHEMA)
    changed_schema["properties"]["spec"]["properties"]["new"] = {"type": "string"}
    changed = ServedKind("kopf.dev", "v1", "KopfExample", "kopfexamples", True, changed_schema)
    new_index = openapi_index([NAMESPACE, POD, changed])
    assert new_index["paths"]["apis/kopf.dev/v1"]["serverRelativeURL"] != url
    assert new_index["paths"]["api/v1"] == openapi_index(KINDS)["paths"]["api/v1"]


def test_index_of_nothing() -> None:
    assert openapi_index([]) == {"paths": {}}


def test_unserved_group_version_has_no_document() -> None:
    assert openapi_group_version(KINDS, "kopf.dev", "v2") is None
    assert openapi_group_version(KINDS, "nothing.io", "v1") is None


def test_documents_are_json() -> None:
    for kind in KINDS:
        doc = doc_of(kind)
        assert json.loads(json.dumps(doc)) == doc
        assert doc["openapi"] == "3.0.0"


# --- component schemas (kubectl explain) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "kind", "builtin", "name"),
    [
        ("", "Pod", True, "io.k8s.api.core.v1.Pod"),
        ("apps", "Deployment", True, "io.k8s.api.apps.v1.Deployment"),
        ("rbac.authorization.k8s.io", "Role", True, "io.k8s.api.rbac.v1.Role"),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            True,
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        ),
        ("kopf.dev", "KopfExample", False, "dev.kopf.v1.KopfExample"),
        ("zalando.org", "KopfPeering", False, "org.zalando.v1.KopfPeering"),
    ],
)
def test_schema_names(group: str, kind: str, builtin: bool, name: str) -> None:
    assert schema_name(group, "v1", kind, builtin=builtin) == name


def test_crd_kind_schema_is_the_crd_schema_with_resource_fields() -> None:
    doc = doc_of(EXAMPLE)
    schema = doc["components"]["schemas"]["dev.kopf.v1.KopfExample"]
    assert schema is schema_by_gvk(doc, "kopf.dev", "v1", "KopfExample")
    assert schema["description"] == "An example resource."
    assert schema["properties"]["spec"] == CRD_SCHEMA["properties"]["spec"]
    assert schema["properties"]["status"] == CRD_SCHEMA["properties"]["status"]
    assert schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["properties"]["kind"]["type"] == "string"
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "apiVersion" not in CRD_SCHEMA["properties"]  # the CRD's schema is not modified


def test_list_kind_schema() -> None:
    doc = doc_of(EXAMPLE)
    schema = schema_by_gvk(doc, "kopf.dev", "v1", "KopfExampleList")
    assert schema["properties"]["items"]["items"] == {"$ref": "#/components/schemas/dev.kopf.v1.KopfExample"}


def test_builtin_kind_schema_is_permissive() -> None:
    schema = schema_by_gvk(doc_of(POD), "", "v1", "Pod")
    assert schema["type"] == "object"
    assert schema["x-kubernetes-preserve-unknown-fields"] is True
    assert schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True


def test_all_refs_resolve() -> None:
    for kind in KINDS:
        doc = doc_of(kind)
        text = json.dumps(doc)
        for ref in re.findall(r'"\$ref": "([^"]+)"', text):
            assert ref.startswith("#/components/schemas/")
            assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"], ref


def test_object_meta_patch_metadata() -> None:
    meta = doc_of(EXAMPLE)["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    owners = meta["properties"]["ownerReferences"]
    assert owners["x-kubernetes-patch-merge-key"] == "uid"
    assert owners["x-kubernetes-patch-strategy"] == "merge"
    assert owners["x-kubernetes-list-map-keys"] == ["uid"]
    assert meta["properties"]["finalizers"]["x-kubernetes-patch-strategy"] == "merge"
    assert meta["properties"]["finalizers"]["items"]["type"] == "string"
    assert meta["properties"]["labels"]["additionalProperties"]["type"] == "string"


# --- list strategies (strategic merge patches of built-ins) ----------------------------------------


def test_list_strategies_annotate_lists_along_paths() -> None:
    spec = schema_by_gvk(doc_of(POD), "", "v1", "Pod")["properties"]["spec"]
    containers = spec["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"]["type"] == "object"
    env = containers["items"]["properties"]["env"]  # a path through a list goes into its items
    assert (env["type"], env["x-kubernetes-patch-merge-key"], env["x-kubernetes-patch-strategy"]) == (
        "array",
        "name",
        "merge",
    )
    volumes = spec["properties"]["volumes"]
    assert volumes["x-kubernetes-patch-strategy"] == "merge,retainKeys"


def test_list_strategies_deep_paths_and_retain_keys_objects() -> None:
    spec = schema_by_gvk(doc_of(DEPLOYMENT), "apps", "v1", "Deployment")["properties"]["spec"]
    containers = spec["properties"]["template"]["properties"]["spec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    strategy = spec["properties"]["strategy"]
    assert strategy["type"] == "object"
    assert strategy["x-kubernetes-patch-strategy"] == "retainKeys"
    assert "x-kubernetes-patch-merge-key" not in strategy


def test_list_strategies_of_scalar_lists() -> None:
    spec = schema_by_gvk(doc_of(NAMESPACE), "", "v1", "Namespace")["properties"]["spec"]
    finalizers = spec["properties"]["finalizers"]
    assert finalizers["type"] == "array"
    assert finalizers["x-kubernetes-patch-strategy"] == "merge"
    assert "x-kubernetes-patch-merge-key" not in finalizers
    assert "type" not in finalizers["items"]


def test_list_strategies_in_metadata_are_left_to_object_meta() -> None:
    pod = schema_by_gvk(doc_of(POD), "", "v1", "Pod")
    assert pod["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]


def test_strategic_merge_patch_is_accepted_by_builtins_only() -> None:
    smp = "application/strategic-merge-patch+json"
    for kind, accepted in [(POD, True), (DEPLOYMENT, True), (EXAMPLE, False)]:
        for _, verb, op in operations(doc_of(kind)):
            if verb == "patch":
                content = op["requestBody"]["content"]
                assert (smp in content) is accepted
                assert "application/merge-patch+json" in content
                assert "application/json-patch+json" in content
                assert "application/apply-patch+yaml" in content


# --- paths and operations --------------------------------------------------------------------------


def test_namespaced_paths() -> None:
    paths = doc_of(EXAMPLE)["paths"]
    base = "/apis/kopf.dev/v1"
    assert sorted(paths) == sorted(
        [
            f"{base}/kopfexamples",
            f"{base}/namespaces/{{namespace}}/kopfexamples",
            f"{base}/namespaces/{{namespace}}/kopfexamples/{{name}}",
            f"{base}/namespaces/{{namespace}}/kopfexamples/{{name}}/status",
        ]
    )
    item = paths[f"{base}/namespaces/{{namespace}}/kopfexamples/{{name}}"]
    assert sorted(item) == ["delete", "get", "parameters", "patch", "put"]
    assert [p["name"] for p in item["parameters"]] == ["name", "namespace", "pretty"]
    collection = paths[f"{base}/namespaces/{{namespace}}/kopfexamples"]
    assert sorted(collection) == ["delete", "get", "parameters", "post"]


def test_cluster_scoped_and_core_paths() -> None:
    paths = doc_of(NAMESPACE)["paths"]
    assert "/api/v1/namespaces/{name}" in paths
    assert "/api/v1/namespaces/{name}/status" in paths
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in paths
    assert "/api/v1/pods" in paths


def test_scale_subresource() -> None:
    doc = doc_of(DEPLOYMENT)
    scale = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    gvk = scale["get"]["x-kubernetes-group-version-kind"]
    assert gvk == {"group": "apps", "kind": "Scale", "version": "v1"}
    assert scale["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
    }
    assert schema_by_gvk(doc, "autoscaling", "v1", "Scale")["properties"]["spec"]


def test_operations_carry_action_and_gvk() -> None:
    actions = {}
    for path, verb, op in operations(doc_of(EXAMPLE)):
        assert op["x-kubernetes-group-version-kind"]["group"] == "kopf.dev"
        assert op["x-kubernetes-group-version-kind"]["version"] == "v1"
        assert op["x-kubernetes-group-version-kind"]["kind"] == "KopfExample"
        assert op["operationId"]
        assert "401" in op["responses"]
        actions[path.rsplit("/", 1)[-1], verb] = op["x-kubernetes-action"]
    assert actions[("{name}", "get")] == "get"
    assert actions[("{name}", "put")] == "put"
    assert actions[("{name}", "patch")] == "patch"
    assert actions[("{name}", "delete")] == "delete"
    assert actions[("kopfexamples", "post")] == "post"
    assert actions[("kopfexamples", "get")] == "list"
    assert actions[("kopfexamples", "delete")] == "deletecollection"
    assert actions[("status", "patch")] == "patch"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_write_operations_declare_query_parameters(kind: ServedKind) -> None:
    for _, verb, op in operations(doc_of(kind)):
        names = {p["name"] for p in op["parameters"] if p["in"] == "query"}
        if verb in ("post", "put", "patch"):
            assert {"dryRun", "fieldManager", "fieldValidation"} <= names
        if verb == "patch":
            assert "force" in names
        if verb == "delete":
            assert {"dryRun", "gracePeriodSeconds", "propagationPolicy"} <= names
        if verb == "get" and op["x-kubernetes-action"] == "list":
            assert {"labelSelector", "fieldSelector", "watch", "resourceVersion", "limit"} <= names


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_kubectl_detects_server_side_field_validation(kind: ServedKind) -> None:
    assert supports_field_validation(KINDS, kind.group, kind.version, kind.kind)


def test_kubectl_detects_field_validation_of_an_unpublished_crd_via_namespaces() -> None:
    assert supports_field_validation([NAMESPACE, POD], "kopf.dev", "v1", "KopfExample", is_crd=True)
    assert not supports_field_validation([POD], "kopf.dev", "v1", "KopfExample", is_crd=True)


# --- with the real kubectl -------------------------------------------------------------------------


@pytest.fixture
async def fake_apiserver(tmp_path: Any) -> AsyncIterator[tuple[str, list[str]]]:
    """Discovery, the OpenAPI documents, and a create endpoint that records its query strings."""
    from aiohttp import web

    posted: list[str] = []

    async def api(_: web.Request) -> web.Response:
        return web.json_response({"kind": "APIVersions", "versions": ["v1"]})

    async def apis(_: web.Request) -> web.Response:
        groups = sorted({k.group for k in KINDS if k.group})
        return web.json_response(
            {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": g,
                        "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                        "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"},
                    }
                    for g in groups
                ],
            }
        )

    async def resources(request: web.Request) -> web.Response:
        group = request.match_info.get("group", "")
        return web.json_response(
            {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{group}/v1" if group else "v1",
                "resources": [
                    {
                        "name": k.plural,
                        "singularName": k.kind.lower(),
                        "namespaced": k.namespaced,
                        "kind": k.kind,
                        "verbs": ["create", "get", "list", "patch", "update", "delete"],
                    }
                    for k in KINDS
                    if k.group == group
                ],
            }
        )

    async def index(_: web.Request) -> web.Response:
        return web.json_response(openapi_index(KINDS))

    async def document(request: web.Request) -> web.Response:
        parts = request.match_info["tail"].split("/")
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        return web.json_response(openapi_group_version(KINDS, group, version), status=200)

    async def create(request: web.Request) -> web.Response:
        posted.append(request.query_string)
        return web.json_response(await request.json(), status=201)

    app = web.Application()
    app.router.add_get("/api", api)
    app.router.add_get("/apis", apis)
    app.router.add_get("/api/v1", resources)
    app.router.add_get("/apis/{group}/v1", resources)
    app.router.add_get("/openapi/v3", index)
    app.router.add_get("/openapi/v3/{tail:.*}", document)
    app.router.add_post("/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples", create)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", posted
    finally:
        await runner.cleanup()


async def kubectl(server: str, home: Any, *args: str, stdin: bytes = b"") -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--server",
        server,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={"HOME": str(home), "KUBECONFIG": str(home / "none"), "PATH": "/usr/bin:/bin"},
    )
    out, _ = await asyncio.wait_for(proc.communicate(stdin), timeout=30)
    return proc.returncode or 0, out.decode()


KUBECTL = shutil.which("kubectl") or "kubectl"


@pytest.mark.kubectl
async def test_kubectl_explain_reads_the_documents(fake_apiserver: tuple[str, list[str]], tmp_path: Any) -> None:
    server, _ = fake_apiserver
    code, out = await kubectl(server, tmp_path, "explain", "kopfexamples.spec")
    assert code == 0, out
    assert "KIND:       KopfExample" in out
    assert "The desired state." in out
    assert "replicas\t<integer>" in out
    code, out = await kubectl(server, tmp_path, "explain", "pods.metadata.ownerReferences")
    assert code == 0, out
    assert "blockOwnerDeletion" in out


@pytest.mark.kubectl
async def test_kubectl_leaves_validation_to_the_server(fake_apiserver: tuple[str, list[str]], tmp_path: Any) -> None:
    server, posted = fake_apiserver
    manifest = json.dumps(
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "ex1", "namespace": "default"},
            "spec": {"unknown": 1},
        }
    )
    code, out = await kubectl(server, tmp_path, "create", "-f", "-", stdin=manifest.encode())
    assert code == 0, out
    assert len(posted) == 1
    assert "fieldValidation=Strict" in posted[0]
