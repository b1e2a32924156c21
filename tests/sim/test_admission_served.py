"""Admission as an apiserver does it, tried from outside as a new user would: ``kopf-sim serve --tls --token auto``,
a plain aiohttp webhook server over HTTPS with a self-signed CA (not kopf), kubectl and the official client.

Each test has a namespace of its own, labelled with its name, and its webhooks select that namespace only
(``namespaceSelector``), so the module's tests share one served simulator without seeing each other's webhooks.
What they fake: nothing; the webhooks are real HTTPS servers on 127.0.0.1, started and stopped by the tests.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import shutil
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from aiohttp import web

from kopf_sim.transports.certs import generate_self_signed
from kopf_sim.transports.serving import ServedApp
from tests.serving import Served, served_simulator

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
Review = dict[str, Any]

_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "title": {"type": "string"}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    },
}
_SUBRESOURCES = {
    "status": {},
    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
}
#: Widgets in two versions (v1 stored, v2 kubectl's preferred one), alike but for their names.
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.hooks.example"},
    "spec": {
        "group": "hooks.example",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": version,
                "served": True,
                "storage": version == "v1",
                "subresources": _SUBRESOURCES,
                "schema": {"openAPIV3Schema": _SCHEMA},
            }
            for version in ("v1", "v2")
        ],
    },
}

_names = itertools.count()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("admission")
    crd = tmp / "crd.yaml"
    crd.write_text(json.dumps(CRD))
    options = ("--tls", "--token", "auto", "--controllers", "none", "--load", str(crd))
    with served_simulator(tmp / "kubeconfig", *options) as served:
        assert served.url.startswith("https://127.0.0.1:")
        yield served


class Hooks:
    """A webhook server as a user writes one with aiohttp: each path a behaviour; every review is recorded."""

    def __init__(self) -> None:
        self.reviews: list[tuple[str, str, Review]] = []  # (behaviour, query, review)
        self.app = web.Application()
        self.app.router.add_post("/{behaviour}", self.handle)
        self.server = ServedApp(self.app, tls=True)
        self.closing: asyncio.Server | None = None
        self.closing_url = ""
        self.closing_ca = ""

    @property
    def ca_bundle(self) -> str:
        assert self.server.ca_pem is not None
        return base64.b64encode(self.server.ca_pem).decode()

    def url(self, behaviour: str) -> str:
        return f"{self.server.url}/{behaviour}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        behaviour = request.match_info["behaviour"]
        review = await request.json()
        self.reviews.append((behaviour, request.query_string, review))
        uid = review["request"]["uid"]
        response: Review = {"uid": uid, "allowed": True}
        if behaviour == "deny":
            response = {
                "uid": uid,
                "allowed": False,
                "status": {"code": 403, "reason": "Forbidden", "message": "frozen"},
            }
        elif behaviour == "invalid":
            causes = [
                {"reason": "FieldValueInvalid", "field": "spec.title", "message": 'Invalid value: "x": too short'},
                {"reason": "FieldValueRequired", "field": "spec.replicas", "message": "Required value"},
            ]
            details = {"name": review["request"]["object"]["metadata"]["name"], "group": "hooks.example"}
            details |= {"kind": "Widget", "causes": causes}
            status = {"code": 422, "reason": "Invalid", "message": "invalid widget", "details": details}
            response = {"uid": uid, "allowed": False, "status": status}
        elif behaviour == "nocode":
            response = {"uid": uid, "allowed": False}
        elif behaviour == "lowcode":
            response = {"uid": uid, "allowed": False, "status": {"code": 200, "message": "not today"}}
        elif behaviour == "reasononly":
            response = {"uid": uid, "allowed": False, "status": {"reason": "NotToday"}}
        elif behaviour == "label":
            patch = [{"op": "add", "path": "/metadata/labels", "value": {"defaulted": "yes"}}]
            response |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        elif behaviour == "cap":  # a defaulting webhook of Scale objects: at most two replicas
            patch = [{"op": "replace", "path": "/spec/replicas", "value": 2}]
            response |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        elif behaviour == "empty":  # a JSON patch of no operations
            response |= {"patchType": "JSONPatch", "patch": base64.b64encode(b"[]").decode()}
        elif behaviour == "mergepatch":
            patch = {"metadata": {"labels": {"merged": "yes"}}}
            response |= {"patchType": "MergePatch", "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        elif behaviour == "v1beta1nopatchtype":  # as old webhook servers answered: v1beta1, a patch, no type
            patch = [{"op": "add", "path": "/metadata/labels", "value": {"sloppy": "yes"}}]
            response |= {"patch": base64.b64encode(json.dumps(patch).encode()).decode()}
            return web.json_response(
                {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": response}
            )
        elif behaviour == "nopatchtype":
            patch = [{"op": "add", "path": "/metadata/labels/sloppy", "value": "yes"}]
            response |= {"patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        elif behaviour == "garbage":
            return web.Response(text="garbage")
        elif behaviour == "garbagejson":
            return web.Response(text="{not json", content_type="application/json")
        elif behaviour == "hang":
            await asyncio.Event().wait()
        elif behaviour == "bare":
            return web.json_response({"response": response})  # no apiVersion, no kind
        elif behaviour == "v1beta1":
            return web.json_response(
                {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}
            )
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})

    async def __aenter__(self) -> Hooks:
        await self.server.start()
        assert self.server.ca_pem is not None
        # A server that accepts a TLS connection, reads the request, and closes it with no answer.
        bundle = generate_self_signed()
        context = _server_context(bundle.cert_pem, bundle.key_pem)
        self.closing_ca = base64.b64encode(bundle.ca_pem).decode()

        async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
                await reader.readuntil(b"\r\n\r\n")
            writer.close()

        self.closing = await asyncio.start_server(close_at_once, "127.0.0.1", 0, ssl=context)
        port = self.closing.sockets[0].getsockname()[1]
        self.closing_url = f"https://127.0.0.1:{port}/close"
        return self

    async def __aexit__(self, *_: object) -> None:
        if self.closing is not None:
            self.closing.close()
            await self.closing.wait_closed()
        await self.server.stop()

    def seen(self, behaviour: str) -> list[Review]:
        return [review for name, _, review in self.reviews if name == behaviour]


def _server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as tmp:  # ssl loads a certificate chain from files only
        Path(tmp, "cert.pem").write_bytes(cert_pem)
        Path(tmp, "key.pem").write_bytes(key_pem)
        context.load_cert_chain(Path(tmp, "cert.pem"), Path(tmp, "key.pem"))
    return context


@pytest.fixture
async def hooks() -> AsyncIterator[Hooks]:
    async with Hooks() as server:
        yield server


class Cluster:
    """kubectl and the official client of the served simulator, in one namespace of the test's own."""

    def __init__(self, served: Served, namespace: str, cache: Path) -> None:
        self.served, self.namespace, self.cache = served, namespace, cache
        self.configurations: list[tuple[str, str]] = []

    async def kubectl(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            KUBECTL,
            f"--kubeconfig={self.served.kubeconfig}",
            f"--cache-dir={self.cache}",
            "--request-timeout=20s",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), timeout=60)
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    async def apply(self, manifest: Review, *verb: str) -> tuple[int, str, str]:
        return await self.kubectl(*(verb or ("create",)), "-n", self.namespace, "-f", "-", stdin=json.dumps(manifest))

    async def must(self, *args: str, stdin: str | None = None) -> str:
        code, out, err = await self.kubectl(*args, stdin=stdin)
        assert code == 0, err
        return out

    async def webhooks(self, kind: str, *hooks: Review) -> str:
        """Install a configuration of these webhooks, which select this test's namespace only."""
        name = f"{self.namespace}-{kind.lower()}-{next(_names)}"
        for hook in hooks:
            hook.setdefault("namespaceSelector", {"matchLabels": {"test": self.namespace}})
        config = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": f"{kind}WebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": list(hooks),
        }
        await self.must("create", "-f", "-", stdin=json.dumps(config))
        self.configurations.append((f"{kind.lower()}webhookconfigurations", name))
        return name

    async def exists(self, kind: str, name: str) -> bool:
        code, _, err = await self.kubectl("get", kind, name, "-n", self.namespace)
        assert code == 0 or "NotFound" in err, err
        return code == 0

    def client(self) -> kubernetes.client.ApiClient:
        return kubernetes.config.new_client_from_config(config_file=str(self.served.kubeconfig))


@pytest.fixture
async def cluster(served: Served, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    namespace = f"t{next(_names)}-{request.node.name[5:30].replace('_', '-').strip('-')}".lower()
    cluster = Cluster(served, namespace, tmp_path / "cache")
    await cluster.must("create", "namespace", namespace)
    await cluster.must("label", "namespace", namespace, f"test={namespace}")
    try:
        yield cluster
    finally:
        for plural, name in cluster.configurations:
            await cluster.kubectl("delete", plural, name)


def hook(
    name: str,
    url: str,
    ca_bundle: str,
    *,
    resources: list[str],
    group: str = "hooks.example",
    operations: tuple[str, ...] = ("CREATE", "UPDATE"),
    **fields: Any,
) -> Review:
    rule = {"apiGroups": [group], "apiVersions": ["v1"], "operations": list(operations), "resources": resources}
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [rule],
        **fields,
    }


def widget(name: str, version: str = "v1", **spec: Any) -> Review:
    return {"apiVersion": f"hooks.example/{version}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


# -- kubectl scale ------------------------------------------------------------------------------------------


async def test_kubectl_scale_of_a_custom_resource_is_admitted_with_a_scale(cluster: Cluster, hooks: Hooks) -> None:
    assert (await cluster.apply(widget("w1", replicas=1)))[0] == 0
    await cluster.webhooks(
        "Validating", hook("deny.hooks.example", hooks.url("deny"), hooks.ca_bundle, resources=["widgets/scale"])
    )
    code, _, err = await cluster.kubectl("scale", "-n", cluster.namespace, "widgets.hooks.example/w1", "--replicas=5")
    assert code == 1
    assert (
        err.strip()
        == 'Error from server (Forbidden): admission webhook "deny.hooks.example" denied the request: frozen'
    )
    (review,) = hooks.seen("deny")
    request = review["request"]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["resource"] == {"group": "hooks.example", "version": "v1", "resource": "widgets"}
    assert request["subResource"] == "scale" and request["operation"] == "UPDATE"
    assert request["object"]["spec"] == {"replicas": 5} and request["oldObject"]["spec"] == {"replicas": 1}
    replicas = await cluster.must("get", "widget", "w1", "-n", cluster.namespace, "-o", "jsonpath={.spec.replicas}")
    assert replicas == "1"


async def test_kubectl_scale_of_a_deployment_is_admitted_with_a_scale(cluster: Cluster, hooks: Hooks) -> None:
    await cluster.must("create", "deployment", "web", "--image=nginx:1", "-n", cluster.namespace)
    allowing = hook(
        "record.hooks.example", hooks.url("allow"), hooks.ca_bundle, resources=["deployments/scale"], group="apps"
    )
    name = await cluster.webhooks("Validating", allowing)
    await cluster.must("scale", "-n", cluster.namespace, "deployment/web", "--replicas=3")
    (review,) = hooks.seen("allow")
    assert review["request"]["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert review["request"]["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert review["request"]["object"]["spec"] == {"replicas": 3}

    await cluster.must("delete", "validatingwebhookconfiguration", name)
    denying = hook(
        "deny.hooks.example", hooks.url("deny"), hooks.ca_bundle, resources=["deployments/scale"], group="apps"
    )
    await cluster.webhooks("Validating", denying)
    code, _, err = await cluster.kubectl("scale", "-n", cluster.namespace, "deployment/web", "--replicas=7")
    assert code == 1 and 'admission webhook "deny.hooks.example" denied the request: frozen' in err
    replicas = await cluster.must(
        "get", "deployment", "web", "-n", cluster.namespace, "-o", "jsonpath={.spec.replicas}"
    )
    assert replicas == "3"


async def test_kubectl_patch_of_the_scale_subresource_is_mutated_and_refused(cluster: Cluster, hooks: Hooks) -> None:
    assert (await cluster.apply(widget("w1", replicas=1)))[0] == 0
    capping = hook("cap.hooks.example", hooks.url("cap"), hooks.ca_bundle, resources=["widgets/scale"])
    await cluster.webhooks("Mutating", capping)
    patch = ("patch", "-n", cluster.namespace, "widgets.hooks.example", "w1", "--subresource=scale", "--type=merge")
    scale = json.loads(await cluster.must(*patch, "-p", '{"spec": {"replicas": 9}}', "-o", "json"))
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 2}
    (review,) = hooks.seen("cap")
    assert review["request"]["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert review["request"]["subResource"] == "scale" and review["request"]["object"]["spec"] == {"replicas": 9}
    replicas = await cluster.must("get", "widget", "w1", "-n", cluster.namespace, "-o", "jsonpath={.spec.replicas}")
    assert replicas == "2"

    await cluster.webhooks(
        "Validating", hook("deny.hooks.example", hooks.url("deny"), hooks.ca_bundle, resources=["widgets/*"])
    )
    code, _, err = await cluster.kubectl(*patch, "-p", '{"spec": {"replicas": 1}}')
    assert code == 1
    assert err.strip() == (
        'Error from server (Forbidden): admission webhook "deny.hooks.example" denied the request: frozen'
    )
    replicas = await cluster.must("get", "widget", "w1", "-n", cluster.namespace, "-o", "jsonpath={.spec.replicas}")
    assert replicas == "2"


async def test_every_write_of_kubectl_and_the_client_is_admitted(cluster: Cluster, hooks: Hooks) -> None:
    everything = hook(
        "record.hooks.example",
        hooks.url("allow"),
        hooks.ca_bundle,
        resources=["widgets", "widgets/*"],
        operations=("*",),
    )
    await cluster.webhooks("Validating", everything)
    ns = ("-n", cluster.namespace)
    await cluster.must("create", *ns, "-f", "-", stdin=json.dumps(widget("w1", replicas=1)))
    await cluster.must("create", *ns, "--dry-run=server", "-f", "-", stdin=json.dumps(widget("w2")))
    current = json.loads(await cluster.must("get", *ns, "widget", "w1", "-o", "json"))
    current["spec"]["title"] = "replaced"
    await cluster.must("replace", *ns, "-f", "-", stdin=json.dumps(current))
    await cluster.must("patch", *ns, "widget", "w1", "--type=merge", "-p", '{"spec": {"title": "patched"}}')
    status = '{"status": {"replicas": 1}}'
    await cluster.must("patch", *ns, "widget", "w1", "--subresource=status", "--type=merge", "-p", status)
    await cluster.must("scale", *ns, "widget/w1", "--replicas=2")
    await cluster.must("apply", *ns, "--server-side", "-f", "-", stdin=json.dumps(widget("w3", title="applied")))
    await cluster.must("apply", *ns, "--server-side", "-f", "-", stdin=json.dumps(widget("w3", title="again")))
    await cluster.must("apply", *ns, "-f", "-", stdin=json.dumps(widget("w4", title="client-side")))
    await cluster.must("delete", *ns, "widget", "w1")
    api = kubernetes.client.CustomObjectsApi(cluster.client())
    await asyncio.to_thread(
        api.delete_collection_namespaced_custom_object, "hooks.example", "v1", cluster.namespace, "widgets"
    )

    seen = [
        (r["operation"], r.get("subResource", ""), r.get("name", ""), r["dryRun"], r["kind"]["kind"])
        for r in (review["request"] for review in hooks.seen("allow"))
    ]
    assert seen[:9] == [
        ("CREATE", "", "w1", False, "Widget"),
        ("CREATE", "", "w2", True, "Widget"),
        ("UPDATE", "", "w1", False, "Widget"),
        ("UPDATE", "", "w1", False, "Widget"),
        ("UPDATE", "status", "w1", False, "Widget"),
        ("UPDATE", "scale", "w1", False, "Scale"),
        ("CREATE", "", "w3", False, "Widget"),
        ("UPDATE", "", "w3", False, "Widget"),
        ("CREATE", "", "w4", False, "Widget"),
    ]
    assert seen[9] == ("DELETE", "", "w1", False, "Widget")
    # deletecollection: each item is admitted, with its old object and no name (as the apiserver does).
    collected = sorted(r["request"]["oldObject"]["metadata"]["name"] for r in hooks.seen("allow")[10:])
    assert collected == ["w3", "w4"] and seen[10:] == [("DELETE", "", "", False, "Widget")] * 2
    assert not await cluster.exists("widgets.hooks.example", "w2")  # the dry run stored nothing


# -- Dispatch ---------------------------------------------------------------------------------------------


async def test_a_webhook_for_v1_is_called_for_a_v2_request(cluster: Cluster, hooks: Hooks) -> None:
    await cluster.webhooks(
        "Validating", hook("deny.hooks.example", hooks.url("deny"), hooks.ca_bundle, resources=["widgets"])
    )
    code, _, err = await cluster.apply(widget("w2", "v2"))
    assert code == 1 and 'admission webhook "deny.hooks.example" denied the request: frozen' in err
    (review,) = hooks.seen("deny")
    assert review["request"]["kind"]["version"] == "v1" and review["request"]["requestKind"]["version"] == "v2"
    assert review["request"]["object"]["apiVersion"] == "hooks.example/v1"
    assert not await cluster.exists("widgets.hooks.example", "w2")


async def test_reinvocation_if_needed(cluster: Cluster, hooks: Hooks) -> None:
    first = hook(
        "first.hooks.example", hooks.url("allow"), hooks.ca_bundle, resources=["widgets"], reinvocationPolicy="IfNeeded"
    )
    second = hook("second.hooks.example", hooks.url("label"), hooks.ca_bundle, resources=["widgets"])
    await cluster.webhooks("Mutating", first, second)
    out = await cluster.apply(widget("w1"), "create")
    assert out[0] == 0, out
    assert [behaviour for behaviour, _, _ in hooks.reviews] == ["allow", "label", "allow"]
    assert hooks.seen("allow")[1]["request"]["object"]["metadata"]["labels"] == {"defaulted": "yes"}


async def test_the_review_version_is_negotiated(cluster: Cluster, hooks: Hooks) -> None:
    old = hook("old.hooks.example", hooks.url("v1beta1"), hooks.ca_bundle, resources=["widgets"])
    old["admissionReviewVersions"] = ["v1beta1"]
    await cluster.webhooks("Validating", old)
    assert (await cluster.apply(widget("w1")))[0] == 0
    assert hooks.seen("v1beta1")[0]["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_a_generated_name_is_not_in_the_request(cluster: Cluster, hooks: Hooks) -> None:
    await cluster.webhooks(
        "Validating", hook("record.hooks.example", hooks.url("allow"), hooks.ca_bundle, resources=["widgets"])
    )
    body = widget("")
    body["metadata"] = {"generateName": "w-"}
    assert (await cluster.apply(body))[0] == 0
    (review,) = hooks.seen("allow")
    assert "name" not in review["request"]
    assert review["request"]["object"]["metadata"]["name"].startswith("w-")


@pytest.mark.parametrize(
    ("kind", "behaviour", "reason"),
    [
        (
            "Mutating",
            "bare",
            (
                "received invalid webhook response: expected webhook response of "
                "admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
            ),
        ),
        (
            "Mutating",
            "nopatchtype",
            "received invalid webhook response: webhook returned response.patch but not response.patchType",
        ),
        ("Validating", "label", "received invalid webhook response: validating webhook may not return response.patch"),
        (
            "Mutating",
            "mergepatch",
            'received invalid webhook response: webhook returned invalid response.patchType of "MergePatch"',
        ),
    ],
)
async def test_responses_an_apiserver_refuses(
    cluster: Cluster, hooks: Hooks, kind: str, behaviour: str, reason: str
) -> None:
    await cluster.webhooks(
        kind, hook("check.hooks.example", hooks.url(behaviour), hooks.ca_bundle, resources=["widgets"])
    )
    code, _, err = await cluster.apply(widget("w1"))
    assert code == 1
    assert err.strip() == (
        'Error from server (InternalError): error when creating "STDIN": Internal error occurred: '
        f'failed calling webhook "check.hooks.example": {reason}'
    )
    assert not await cluster.exists("widgets.hooks.example", "w1")


async def test_a_mutating_patch_on_delete_fails_the_request_whatever_the_policy(cluster: Cluster, hooks: Hooks) -> None:
    assert (await cluster.apply(widget("w1")))[0] == 0
    meddler = hook(
        "meddler.hooks.example",
        hooks.url("label"),
        hooks.ca_bundle,
        resources=["widgets"],
        operations=("DELETE",),
        failurePolicy="Ignore",
    )
    await cluster.webhooks("Mutating", meddler)
    code, _, err = await cluster.kubectl("delete", "widgets.hooks.example", "w1", "-n", cluster.namespace)
    assert code == 1
    assert err.strip() == (
        'Error from server (InternalError): Internal error occurred: admission webhook "meddler.hooks.example" '
        "attempted to modify the object, which is not supported for this operation"
    )
    (review,) = hooks.seen("label")
    assert review["request"]["operation"] == "DELETE" and review["request"]["object"] is None
    assert await cluster.exists("widgets.hooks.example", "w1")


async def test_an_empty_patch_on_delete_changes_nothing(cluster: Cluster, hooks: Hooks) -> None:
    assert (await cluster.apply(widget("w1")))[0] == 0
    noop = hook(
        "noop.hooks.example", hooks.url("empty"), hooks.ca_bundle, resources=["widgets"], operations=("DELETE",)
    )
    await cluster.webhooks("Mutating", noop)
    await cluster.must("delete", "widgets.hooks.example", "w1", "-n", cluster.namespace)
    assert len(hooks.seen("empty")) == 1
    assert not await cluster.exists("widgets.hooks.example", "w1")


async def test_a_v1beta1_patch_without_its_type_is_a_failed_call(cluster: Cluster, hooks: Hooks) -> None:
    old = hook("old.hooks.example", hooks.url("v1beta1nopatchtype"), hooks.ca_bundle, resources=["widgets"])
    old["admissionReviewVersions"] = ["v1beta1"]
    await cluster.webhooks("Mutating", old)
    code, _, err = await cluster.apply(widget("w1"))
    assert code == 1
    assert err.strip() == (
        'Error from server (InternalError): error when creating "STDIN": Internal error occurred: '
        'failed calling webhook "old.hooks.example": unsupported patch type ""'
    )
    assert not await cluster.exists("widgets.hooks.example", "w1")

    # A failed call, so the Ignore policy lets the write through, unpatched.
    for plural, name in cluster.configurations:
        await cluster.must("delete", plural, name)
    cluster.configurations.clear()
    await cluster.webhooks("Mutating", {**old, "name": "tolerant.hooks.example", "failurePolicy": "Ignore"})
    assert (await cluster.apply(widget("w1")))[0] == 0
    labels = await cluster.must("get", "widget", "w1", "-n", cluster.namespace, "-o", "jsonpath={.metadata.labels}")
    assert labels == ""


async def test_denials_are_normalised(cluster: Cluster, hooks: Hooks) -> None:
    await cluster.webhooks(
        "Validating", hook("nocode.hooks.example", hooks.url("nocode"), hooks.ca_bundle, resources=["widgets"])
    )
    code, _, err = await cluster.apply(widget("w1"))
    assert code == 1
    assert err.strip() == (
        'Error from server: error when creating "STDIN": '
        'admission webhook "nocode.hooks.example" denied the request without explanation'
    )
    api = kubernetes.client.CustomObjectsApi(cluster.client())
    for behaviour, message in [("lowcode", "not today"), ("reasononly", "NotToday")]:
        for plural, name in list(cluster.configurations):
            await cluster.kubectl("delete", plural, name)
        cluster.configurations.clear()
        await cluster.webhooks(
            "Validating",
            hook(f"{behaviour}.hooks.example", hooks.url(behaviour), hooks.ca_bundle, resources=["widgets"]),
        )
        with pytest.raises(kubernetes.client.ApiException) as raised:
            await asyncio.to_thread(
                api.create_namespaced_custom_object, "hooks.example", "v1", cluster.namespace, "widgets", widget("w1")
            )
        assert raised.value.status == 400  # never a success code with a failure inside
        body = json.loads(raised.value.body)
        assert body["message"] == f'admission webhook "{behaviour}.hooks.example" denied the request: {message}'


async def test_field_causes_pass_through_to_kubectl_and_the_client(cluster: Cluster, hooks: Hooks) -> None:
    await cluster.webhooks(
        "Validating", hook("fields.hooks.example", hooks.url("invalid"), hooks.ca_bundle, resources=["widgets"])
    )
    code, _, err = await cluster.apply(widget("w1", title="x"))
    assert code == 1
    assert err.splitlines() == [
        'The Widget "w1" is invalid: ',
        '* spec.title: Invalid value: "x": too short',
        "* spec.replicas: Required value",
    ]
    api = kubernetes.client.CustomObjectsApi(cluster.client())
    with pytest.raises(kubernetes.client.ApiException) as raised:
        await asyncio.to_thread(
            api.create_namespaced_custom_object, "hooks.example", "v1", cluster.namespace, "widgets", widget("w1")
        )
    body = json.loads(raised.value.body)
    assert raised.value.status == 422 and body["reason"] == "Invalid"
    assert [cause["field"] for cause in body["details"]["causes"]] == ["spec.title", "spec.replicas"]


# -- Webhooks that fail ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "failure"),
    [
        ("garbage", "failed to call webhook: serializer for text/plain; charset=utf-8 doesn't exist"),
        (
            "garbagejson",
            (
                "failed to call webhook: couldn't get version/kind; json parse error: invalid "
                "character 'n' looking for beginning of object key string"
            ),
        ),
        ("hang", 'failed to call webhook: Post "{url}?timeout=2s": context deadline exceeded'),
        ("close", 'failed to call webhook: Post "{url}?timeout=2s": EOF'),
        (
            "refused",
            'failed to call webhook: Post "{url}?timeout=2s": dial tcp 127.0.0.1:1: connect: connection refused',
        ),
        (
            "untrusted",
            (
                'failed to call webhook: Post "{url}?timeout=2s": '
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            ),
        ),
    ],
)
async def test_failing_webhooks_fail_the_request_in_the_apiservers_words(
    cluster: Cluster, hooks: Hooks, behaviour: str, failure: str
) -> None:
    url, ca = hooks.url(behaviour), hooks.ca_bundle
    if behaviour == "close":
        url, ca = hooks.closing_url, hooks.closing_ca
    elif behaviour == "refused":
        url = "https://127.0.0.1:1/refused"
    elif behaviour == "untrusted":  # the server's certificate is not signed by the CA of the caBundle
        url, ca = hooks.url("allow"), hooks.closing_ca
    await cluster.webhooks("Validating", hook("strict.hooks.example", url, ca, resources=["widgets"], timeoutSeconds=2))
    started = time.monotonic()
    code, _, err = await cluster.apply(widget("w1"))
    elapsed = time.monotonic() - started
    assert code == 1
    assert err.strip() == (
        'Error from server (InternalError): error when creating "STDIN": Internal error occurred: '
        f'failed calling webhook "strict.hooks.example": {failure.format(url=url)}'
    )
    assert elapsed < 15  # within the webhook's timeout (kubectl's own start included)
    if behaviour == "hang":
        assert elapsed >= 2  # the apiserver waits for the whole timeout
    assert not await cluster.exists("widgets.hooks.example", "w1")

    # The same webhook with the Ignore policy: the write goes through.
    for plural, name in cluster.configurations:
        await cluster.must("delete", plural, name)
    cluster.configurations.clear()
    tolerant = hook("tolerant.hooks.example", url, ca, resources=["widgets"], timeoutSeconds=2, failurePolicy="Ignore")
    await cluster.webhooks("Validating", tolerant)
    assert (await cluster.apply(widget("w1")))[0] == 0


async def test_a_webhook_of_a_missing_service_fails_the_request_in_the_apiservers_words(cluster: Cluster) -> None:
    missing = hook("svc.hooks.example", "", "", resources=["widgets"])
    missing["clientConfig"] = {"service": {"name": "nosuch", "namespace": cluster.namespace, "path": "/validate"}}
    await cluster.webhooks("Validating", missing)
    code, _, err = await cluster.apply(widget("w1"))
    assert code == 1
    assert err.strip() == (
        'Error from server (InternalError): error when creating "STDIN": Internal error occurred: '
        'failed calling webhook "svc.hooks.example": failed to call webhook: '
        f'Post "https://nosuch.{cluster.namespace}.svc:443/validate?timeout=10s": service "nosuch" not found'
    )
    assert not await cluster.exists("widgets.hooks.example", "w1")


# -- Configurations ---------------------------------------------------------------------------------------


async def test_configurations_are_validated(cluster: Cluster) -> None:
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"{cluster.namespace}-bad"},
        "webhooks": [
            {
                "name": "bad.hooks.example",
                "clientConfig": {"url": "http://127.0.0.1:9/x"},
                "sideEffects": "Unknown",
                "timeoutSeconds": 60,
                "failurePolicy": "Maybe",
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
            },
            {
                "name": "bad.hooks.example",
                "clientConfig": {"url": "https://127.0.0.1:9/x"},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            },
        ],
    }
    code, _, err = await cluster.kubectl("create", "-f", "-", stdin=json.dumps(config))
    assert code == 1
    assert err.splitlines() == [
        f'The ValidatingWebhookConfiguration "{cluster.namespace}-bad" is invalid: ',
        '* webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"',
        '* webhooks[0].sideEffects: Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"',
        "* webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds",
        "* webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; "
        "desired format: https://host[/path]",
        "* webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        '* webhooks[1].name: Duplicate value: "bad.hooks.example"',
    ]


async def test_configurations_are_defaulted(cluster: Cluster, hooks: Hooks) -> None:
    minimal = hook("min.hooks.example", hooks.url("allow"), hooks.ca_bundle, resources=["widgets"])
    name = await cluster.webhooks("Mutating", minimal)
    stored = yaml.safe_load(await cluster.must("get", "mutatingwebhookconfiguration", name, "-o", "yaml"))
    (webhook,) = stored["webhooks"]
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["matchPolicy"] == "Equivalent"
    assert webhook["objectSelector"] == {}
    assert webhook["timeoutSeconds"] == 10
    assert webhook["reinvocationPolicy"] == "Never"
    assert webhook["rules"][0]["scope"] == "*"
