"""The official ``kubernetes`` Python client against the served simulator (HTTPS with a bearer token).

The client is synchronous (urllib3), so the simulator is served by :class:`ServedApp` in an event loop
of its own, in a background thread; the tests call the client from the main thread. Whatever the tests
do to the cluster directly (e.g. compacting the history) runs in that loop's thread too. At the end, every
verb of every kind that the workload controllers touch goes through the client's typed models, with the
built-in controllers running in that loop and without them, then the shapes fixed for the client one by one.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import kubernetes
import pykube
import pytest
from kubernetes.client import ApiException

from kopf_sim.controllers import ControllerManager, ControllerSettings
from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.serving import ServedApp
from tests.official_shapes import ShapeAudit, write_with_nulls

TOKEN = "official-client-t0ken"
T = TypeVar("T")


class ServerThread:
    """A simulated cluster served on 127.0.0.1 from an event loop in a background thread.

    With ``controllers``, the built-in controllers run in that loop too (in real time).
    """

    def __init__(
        self, *, tls: bool = True, token: str | None = TOKEN, controllers: ControllerSettings | None = None
    ) -> None:
        self.cluster = Cluster()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kopf-sim-served", daemon=True)
        self.served = ServedApp(build_app(self.cluster), host="127.0.0.1", tls=tls, token=token)
        self.controllers = None if controllers is None else ControllerManager(self.cluster, controllers)

    def start(self) -> None:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.served.start(), self.loop).result(timeout=30)
        if self.controllers is not None:
            self.call(self.controllers.start)

    def stop(self) -> None:
        try:
            if self.controllers is not None:
                asyncio.run_coroutine_threadsafe(self.controllers.stop(), self.loop).result(timeout=30)
            asyncio.run_coroutine_threadsafe(self.served.stop(), self.loop).result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
            self.loop.close()

    def call(self, fn: Callable[[], T]) -> T:
        """Run a function in the serving loop's thread (the cluster is not thread-safe)."""
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return future.result(timeout=30)


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """The served cluster; with the controllers' settings as the fixture's parameter, with them running."""
    thread = ServerThread(controllers=getattr(request, "param", None))
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


@pytest.fixture
def kubeconfig_path(server: ServerThread, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    server.served.write_kubeconfig(path)
    return path


@pytest.fixture
def api_client(kubeconfig_path: Path) -> Iterator[kubernetes.client.ApiClient]:
    """A client configured the usual way: from the kubeconfig written by the simulator."""
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(kubeconfig_path), client_configuration=configuration)
    assert configuration.client_side_validation  # the default: the models check what they are given
    with kubernetes.client.ApiClient(configuration) as client:
        yield client


@pytest.fixture
def core(api_client: kubernetes.client.ApiClient) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client)


def hand_made_configuration(server: ServerThread, tmp_path: Path, token: str | None) -> kubernetes.client.Configuration:
    assert server.served.ca_pem is not None
    ca_path = tmp_path / "ca.crt"
    ca_path.write_bytes(server.served.ca_pem)
    configuration = kubernetes.client.Configuration()
    configuration.host = server.served.url
    configuration.ssl_ca_cert = str(ca_path)
    configuration.verify_ssl = True
    if token is not None:
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
    return configuration


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}}}
    if data:
        body["data"] = data
    return body


def error_body(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body = exc.value.body
    assert body is not None
    return dict(json.loads(body))


# -- Configuration and authentication --------------------------------------------------------------


def test_kubeconfig_written_by_the_simulator(
    kubeconfig_path: Path, core: kubernetes.client.CoreV1Api, server: ServerThread
) -> None:
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(kubeconfig_path), client_configuration=configuration)
    assert configuration.host == server.served.url
    assert configuration.host.startswith("https://127.0.0.1:")
    assert configuration.verify_ssl
    names = [ns.metadata.name for ns in core.list_namespace().items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_hand_made_configuration(server: ServerThread, tmp_path: Path) -> None:
    configuration = hand_made_configuration(server, tmp_path, TOKEN)
    with kubernetes.client.ApiClient(configuration) as client:
        version = kubernetes.client.VersionApi(client).get_code()
        assert (version.major, version.minor, version.git_version) == ("1", "32", "v1.32.0")
        namespace = kubernetes.client.CoreV1Api(client).read_namespace("default")
        assert namespace.metadata.name == "default"
        assert namespace.status.phase == "Active"
        groups = kubernetes.client.ApisApi(client).get_api_versions()
        assert "apps" in [group.name for group in groups.groups]


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_unauthenticated_client_gets_401(server: ServerThread, tmp_path: Path, token: str | None) -> None:
    configuration = hand_made_configuration(server, tmp_path, token)
    with kubernetes.client.ApiClient(configuration) as client, pytest.raises(ApiException) as exc:
        kubernetes.client.CoreV1Api(client).list_namespace()
    assert exc.value.status == 401
    body = error_body(exc)
    assert body["kind"] == "Status"
    assert (body["reason"], body["code"], body["message"]) == ("Unauthorized", 401, "Unauthorized")


# -- CoreV1Api -------------------------------------------------------------------------------------


def test_namespaces(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespace({"metadata": {"name": "ns1", "labels": {"team": "a"}}})
    assert created.metadata.uid
    assert created.status.phase == "Active"
    assert created.metadata.labels["kubernetes.io/metadata.name"] == "ns1"
    listed = core.list_namespace(label_selector="team=a")
    assert [ns.metadata.name for ns in listed.items] == ["ns1"]
    # The client (v37) returns deletions' answers as plain dicts. The apiserver answers with the namespace
    # as marked for deletion; an empty namespace then goes away at once.
    deleted = core.delete_namespace("ns1")
    assert deleted["kind"] == "Namespace"
    assert deleted["status"]["phase"] == "Terminating"
    assert deleted["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiException) as exc:
        core.read_namespace("ns1")
    assert exc.value.status == 404


def test_configmaps_crud(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", configmap("cm1", {"app": "x"}, key="v1"))
    assert created.metadata.namespace == "default"
    assert created.metadata.resource_version
    assert created.metadata.creation_timestamp is not None
    assert created.data == {"key": "v1"}

    read = core.read_namespaced_config_map("cm1", "default")
    assert read.metadata.uid == created.metadata.uid
    assert read.metadata.resource_version == created.metadata.resource_version

    read.data["key"] = "v2"
    replaced = core.replace_namespaced_config_map("cm1", "default", read)
    assert replaced.data == {"key": "v2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    # A dict body goes as a strategic merge patch, a list as a JSON patch.
    patched = core.patch_namespaced_config_map("cm1", "default", {"data": {"other": "o"}})
    assert patched.data == {"key": "v2", "other": "o"}
    patched = core.patch_namespaced_config_map("cm1", "default", [{"op": "remove", "path": "/data/key"}])
    assert patched.data == {"other": "o"}
    patched = core.patch_namespaced_config_map(
        "cm1", "default", {"data": {"other": None}}, _content_type="application/merge-patch+json"
    )
    assert not patched.data

    status = core.delete_namespaced_config_map("cm1", "default")
    assert status["kind"] == "Status"
    assert status["status"] == "Success"
    assert status["details"] == {"name": "cm1", "kind": "configmaps", "uid": created.metadata.uid}
    assert core.list_namespaced_config_map("default").items == []


def test_secret_string_data_is_write_only(core: kubernetes.client.CoreV1Api) -> None:
    body = {
        "metadata": {"name": "creds"},
        "data": {"user": "b2xk", "token": "dG9rZW4="},
        "stringData": {"user": "admin"},
    }
    created = core.create_namespaced_secret("default", body)
    assert created.string_data is None
    assert created.data == {"user": "YWRtaW4=", "token": "dG9rZW4="}  # stringData wins, base64-encoded
    patched = core.patch_namespaced_secret("creds", "default", {"stringData": {"extra": "x"}})
    assert patched.string_data is None
    assert patched.data == {"user": "YWRtaW4=", "token": "dG9rZW4=", "extra": "eA=="}
    raw = json.loads(core.read_namespaced_secret("creds", "default", _preload_content=False).data)
    assert "stringData" not in raw


def test_a_secret_replaced_without_a_type_is_opaque_as_when_created_so(core: kubernetes.client.CoreV1Api) -> None:
    """The apiserver defaults an empty type on every write: a PUT of a body without one leaves the secret Opaque
    (the simulator dropped the type, so a child replaced by an operator differed from one created)."""
    core.create_namespaced_secret("default", {"metadata": {"name": "creds"}, "data": {"user": "b2xk"}})
    replaced = core.replace_namespaced_secret("creds", "default", {"metadata": {"name": "creds"}, "data": {}})
    assert replaced.type == core.read_namespaced_secret("creds", "default").type == "Opaque"


def test_list_with_label_selectors(core: kubernetes.client.CoreV1Api) -> None:
    for name, labels in [
        ("a", {"tier": "web", "env": "prod"}),
        ("b", {"tier": "db", "env": "prod"}),
        ("c", {"tier": "web", "env": "dev"}),
        ("d", {}),
    ]:
        core.create_namespaced_config_map("default", configmap(name, labels))

    def names(selector: str) -> list[str]:
        return [cm.metadata.name for cm in core.list_namespaced_config_map("default", label_selector=selector).items]

    assert names("tier=web") == ["a", "c"]
    assert names("tier=web,env=prod") == ["a"]
    assert names("env!=prod") == ["c", "d"]
    assert names("tier in (db,cache)") == ["b"]
    assert names("!tier") == ["d"]
    assert names("env") == ["a", "b", "c"]
    everywhere = core.list_config_map_for_all_namespaces(label_selector="tier=db")
    assert [(cm.metadata.namespace, cm.metadata.name) for cm in everywhere.items] == [("default", "b")]


def test_list_in_pages_with_limit_and_continue(core: kubernetes.client.CoreV1Api) -> None:
    expected = [f"cm{i:02d}" for i in range(7)]
    for name in reversed(expected):
        core.create_namespaced_config_map("default", configmap(name))
    pages: list[list[str]] = []
    remaining: list[int | None] = []
    first = core.list_namespaced_config_map("default", limit=3)
    page = first
    while True:
        pages.append([cm.metadata.name for cm in page.items])
        remaining.append(page.metadata.remaining_item_count)
        # A change in between does not show up in the later pages: they are of the first page's version.
        core.create_namespaced_config_map("default", configmap(f"zz-late-{len(pages)}"))
        if not page.metadata._continue:
            break
        assert page.metadata.resource_version == first.metadata.resource_version
        page = core.list_namespaced_config_map("default", limit=3, _continue=page.metadata._continue)
    assert pages == [expected[0:3], expected[3:6], expected[6:7]]
    assert remaining == [4, 1, None]

    # Modified and deleted objects also appear in later pages as they were at the first page's version.
    first = core.list_namespaced_config_map("default", limit=2)
    core.patch_namespaced_config_map("cm02", "default", {"data": {"changed": "later"}})
    core.delete_namespaced_config_map("cm03", "default")
    second = core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    assert [(cm.metadata.name, cm.data) for cm in second.items] == [("cm02", None), ("cm03", None)]
    assert second.metadata.resource_version == first.metadata.resource_version

    with pytest.raises(ApiException) as exc:
        core.list_namespaced_config_map("default", limit=3, _continue="not-a-token")
    assert exc.value.status == 400


# -- AppsV1Api -------------------------------------------------------------------------------------

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]},
        },
    },
}


def test_deployment(api_client: kubernetes.client.ApiClient) -> None:
    apps = kubernetes.client.AppsV1Api(api_client)
    created = apps.create_namespaced_deployment("default", DEPLOYMENT)
    assert created.metadata.generation == 1
    assert created.spec.replicas == 2
    assert created.spec.template.spec.containers[0].image == "nginx:1.27"

    # A strategic merge patch: containers merge by name, the image changes, the ports stay.
    patched = apps.patch_namespaced_deployment(
        "web", "default", {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.28"}]}}}}
    )
    containers = patched.spec.template.spec.containers
    assert [(c.name, c.image, c.ports[0].container_port) for c in containers] == [("main", "nginx:1.28", 80)]
    assert patched.metadata.generation == 2

    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert (scale.kind, scale.spec.replicas, scale.metadata.name) == ("Scale", 2, "web")
    scale = apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    assert scale.spec.replicas == 5
    current = apps.read_namespaced_deployment("web", "default")
    assert current.spec.replicas == 5
    assert current.metadata.generation == 3

    status = {"status": {"replicas": 5, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 3}}
    updated = apps.patch_namespaced_deployment_status("web", "default", status)
    assert (updated.status.ready_replicas, updated.status.observed_generation) == (3, 3)
    assert updated.metadata.generation == 3  # status writes do not bump the generation
    # The main resource ignores the status, the status subresource ignores the spec.
    ignored = apps.patch_namespaced_deployment("web", "default", {"status": {"readyReplicas": 0}})
    assert ignored.status.ready_replicas == 3
    ignored = apps.patch_namespaced_deployment_status("web", "default", {"spec": {"replicas": 1}})
    assert ignored.spec.replicas == 5
    read_status = apps.read_namespaced_deployment_status("web", "default")
    assert read_status.status.available_replicas == 3

    listed = apps.list_namespaced_deployment("default", label_selector="app=web")
    assert [d.metadata.name for d in listed.items] == ["web"]
    apps.delete_namespaced_deployment("web", "default")
    assert apps.list_namespaced_deployment("default").items == []


# -- CRDs and custom objects -----------------------------------------------------------------------

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "color": {"type": "string"},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, size: int, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": labels},
        "spec": {"size": size, "color": "red"},
    }


def test_custom_objects(api_client: kubernetes.client.ApiClient) -> None:
    extensions = kubernetes.client.ApiextensionsV1Api(api_client)
    crd = extensions.create_custom_resource_definition(CRD)
    assert crd.metadata.name == "widgets.example.com"
    conditions = {
        c.type: c.status for c in extensions.read_custom_resource_definition(crd.metadata.name).status.conditions
    }
    assert conditions["Established"] == "True"

    custom = kubernetes.client.CustomObjectsApi(api_client)
    args = ("example.com", "v1", "default", "widgets")
    created = custom.create_namespaced_custom_object(*args, widget("w1", 1, kind="round"))
    custom.create_namespaced_custom_object(*args, widget("w2", 2, kind="square"))
    assert created["metadata"]["uid"]
    assert created["metadata"]["generation"] == 1
    assert custom.get_namespaced_custom_object(*args, "w1")["spec"] == {"size": 1, "color": "red"}

    listed = custom.list_namespaced_custom_object(*args)
    assert listed["kind"] == "WidgetList"
    assert [w["metadata"]["name"] for w in listed["items"]] == ["w1", "w2"]
    selected = custom.list_namespaced_custom_object(*args, label_selector="kind=square")
    assert [w["metadata"]["name"] for w in selected["items"]] == ["w2"]
    everywhere = custom.list_cluster_custom_object("example.com", "v1", "widgets")
    assert len(everywhere["items"]) == 2

    # A merge patch: null removes a key, the rest merges.
    patched = custom.patch_namespaced_custom_object(*args, "w1", {"spec": {"size": 3, "color": None}})
    assert patched["spec"] == {"size": 3}
    assert patched["metadata"]["generation"] == 2

    with_status = custom.patch_namespaced_custom_object_status(*args, "w1", {"status": {"phase": "Ready"}})
    assert with_status["status"] == {"phase": "Ready"}
    assert with_status["metadata"]["generation"] == 2
    assert custom.get_namespaced_custom_object_status(*args, "w1")["status"] == {"phase": "Ready"}

    # Schema validation: 422 with the apiserver's message.
    with pytest.raises(ApiException) as exc:
        custom.patch_namespaced_custom_object(*args, "w1", {"spec": {"size": 0}})
    assert exc.value.status == 422
    assert (
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"
        in error_body(exc)["message"]
    )

    deleted = custom.delete_namespaced_custom_object(*args, "w1")
    assert deleted["status"] == "Success"
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object(*args, "w1")
    assert exc.value.status == 404
    assert error_body(exc)["message"] == 'widgets.example.com "w1" not found'


# -- Errors ----------------------------------------------------------------------------------------


def test_errors_are_api_exceptions_with_the_status_in_the_body(core: kubernetes.client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("missing", "default")
    assert exc.value.status == 404
    assert exc.value.reason == "Not Found"
    body = error_body(exc)
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "configmaps"},
        "code": 404,
    }

    core.create_namespaced_config_map("default", configmap("dup"))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", configmap("dup"))
    assert exc.value.status == 409
    assert error_body(exc)["reason"] == "AlreadyExists"
    assert error_body(exc)["message"] == 'configmaps "dup" already exists'

    stale = core.read_namespaced_config_map("dup", "default")
    core.patch_namespaced_config_map("dup", "default", {"data": {"k": "v"}})
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("dup", "default", stale)
    assert exc.value.status == 409
    assert error_body(exc)["reason"] == "Conflict"
    assert error_body(exc)["message"] == (
        'Operation cannot be fulfilled on configmaps "dup": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )

    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", configmap("Not_Valid"))
    assert exc.value.status == 422
    body = error_body(exc)
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(
        'ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": '
        "a lowercase RFC 1123 subdomain must consist of"
    )

    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("nowhere", configmap("cm"))
    assert exc.value.status == 404
    assert error_body(exc)["message"] == 'namespaces "nowhere" not found'


# -- Watching --------------------------------------------------------------------------------------


def events_of(
    stream: Iterator[dict[str, Any]], count: int | None = None, watch: kubernetes.watch.Watch | None = None
) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) of the events, stopping the watch after ``count`` of them."""
    seen = []
    for event in stream:
        raw = event["raw_object"]
        seen.append((event["type"], raw["metadata"].get("name", ""), raw["metadata"]["resourceVersion"]))
        if count is not None and len(seen) >= count:
            assert watch is not None
            watch.stop()
    return seen


def test_watch_lists_then_follows_changes(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", configmap("first"))
    watch = kubernetes.watch.Watch()
    stream = watch.stream(core.list_namespaced_config_map, "default")
    event = next(stream)
    assert (event["type"], event["object"].metadata.name) == ("ADDED", "first")
    assert isinstance(event["object"], kubernetes.client.V1ConfigMap)
    core.create_namespaced_config_map("default", configmap("second"))
    core.patch_namespaced_config_map("first", "default", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("second", "default")
    rest = events_of(stream, 3, watch)
    assert [(t, n) for t, n, _ in rest] == [("ADDED", "second"), ("MODIFIED", "first"), ("DELETED", "second")]
    assert watch.resource_version == rest[-1][2]


def test_watch_resumes_from_the_middle_of_the_history(core: kubernetes.client.CoreV1Api) -> None:
    history: list[tuple[str, str, str]] = []
    for i in range(5):
        obj = core.create_namespaced_config_map("default", configmap(f"cm{i}"))
        history.append(("ADDED", f"cm{i}", obj.metadata.resource_version))
    for i in (1, 3):
        obj = core.patch_namespaced_config_map(f"cm{i}", "default", {"data": {"i": str(i)}})
        history.append(("MODIFIED", f"cm{i}", obj.metadata.resource_version))
    core.delete_namespaced_config_map("cm0", "default")
    history.append(("DELETED", "cm0", core.list_namespaced_config_map("default").metadata.resource_version))

    # From every point of the history: exactly the events after it, in order, none missed or repeated.
    for start in range(len(history)):
        watch = kubernetes.watch.Watch()
        expected = history[start + 1 :]
        if not expected:
            continue
        stream = watch.stream(core.list_namespaced_config_map, "default", resource_version=history[start][2])
        assert events_of(stream, len(expected), watch) == expected

    # Two watchers in a row, the second one from where the first one stopped, see everything once.
    watch = kubernetes.watch.Watch()
    first_half = events_of(
        watch.stream(core.list_namespaced_config_map, "default", resource_version=history[0][2]), 3, watch
    )
    assert watch.resource_version == first_half[-1][2]
    resumed = kubernetes.watch.Watch()
    second_half = events_of(
        resumed.stream(core.list_namespaced_config_map, "default", resource_version=watch.resource_version), 4, resumed
    )
    assert first_half + second_half == history[1:]


def test_watch_of_custom_objects_with_a_label_selector(api_client: kubernetes.client.ApiClient) -> None:
    kubernetes.client.ApiextensionsV1Api(api_client).create_custom_resource_definition(CRD)
    custom = kubernetes.client.CustomObjectsApi(api_client)
    args = ("example.com", "v1", "default", "widgets")
    start = custom.list_namespaced_custom_object(*args)["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(*args, widget("w1", 1, watched="yes"))
    custom.create_namespaced_custom_object(*args, widget("w2", 1))
    custom.patch_namespaced_custom_object(*args, "w1", {"metadata": {"labels": {"watched": "no"}}})
    custom.patch_namespaced_custom_object(*args, "w2", {"metadata": {"labels": {"watched": "yes"}}})
    watch = kubernetes.watch.Watch()
    stream = watch.stream(
        custom.list_namespaced_custom_object, *args, label_selector="watched=yes", resource_version=start
    )
    # Leaving and entering the selection is seen as deletion and creation.
    assert [(t, n) for t, n, _ in events_of(stream, 3, watch)] == [("ADDED", "w1"), ("DELETED", "w1"), ("ADDED", "w2")]


def test_watch_from_a_compacted_version_raises_410(core: kubernetes.client.CoreV1Api, server: ServerThread) -> None:
    old = core.create_namespaced_config_map("default", configmap("old")).metadata.resource_version
    core.create_namespaced_config_map("default", configmap("newer"))
    server.call(server.cluster.compact)

    # With a timeout, the client does not retry: the in-stream ERROR event becomes an ApiException.
    with pytest.raises(ApiException) as exc:
        list(
            kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=5
            )
        )
    assert exc.value.status == 410
    assert exc.value.reason.startswith("Expired: too old resource version: ")

    # Without a timeout, it retries once from the same version, and then gives up.
    with pytest.raises(ApiException) as exc:
        list(kubernetes.watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old))
    assert exc.value.status == 410

    # The recovery: list, then watch from the list's version.
    listing = core.list_namespaced_config_map("default")
    watch = kubernetes.watch.Watch()
    stream = watch.stream(
        core.list_namespaced_config_map, "default", resource_version=listing.metadata.resource_version
    )
    core.create_namespaced_config_map("default", configmap("newest"))
    assert [(t, n) for t, n, _ in events_of(stream, 1, watch)] == [("ADDED", "newest")]


def test_watch_ends_after_timeout_seconds(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", configmap("cm"))
    watch = kubernetes.watch.Watch()
    # The initial events, then nothing for a second, then the server ends the stream and the client returns.
    seen = events_of(watch.stream(core.list_namespaced_config_map, "default", timeout_seconds=1))
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "cm")]


# -- The command line: `kopf-sim serve --token T --tls` in a process of its own --------------------


def test_kopf_sim_serve_in_a_subprocess(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    record = tmp_path / "changes.jsonl"
    executable = Path(sys.executable).parent / "kopf-sim"
    command = [
        str(executable),
        "serve",
        "--host",
        "127.0.0.1",
        "--token",
        TOKEN,
        "--tls",
        "--kubeconfig",
        str(kubeconfig),
        "--record",
        str(record),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready, "kopf-sim serve did not start in time"
        first_line = process.stdout.readline()
        assert first_line.startswith("Serving a simulated Kubernetes API at https://127.0.0.1:")

        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        with kubernetes.client.ApiClient(configuration) as client:
            core = kubernetes.client.CoreV1Api(client)
            created = core.create_namespaced_config_map("default", configmap("from-cli", {"via": "cli"}))
            listed = core.list_namespaced_config_map("default", label_selector="via=cli")
            assert [cm.metadata.uid for cm in listed.items] == [created.metadata.uid]
            watch = kubernetes.watch.Watch()
            stream = watch.stream(core.list_namespaced_config_map, "default", resource_version="0")
            assert [(t, n) for t, n, _ in events_of(stream, 1, watch)] == [("ADDED", "from-cli")]
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert stdout.rstrip().endswith("Stopped.")
    changes = [json.loads(line) for line in record.read_text().splitlines()]
    assert (changes[-1]["type"], changes[-1]["object"]["metadata"]["name"]) == ("ADDED", "from-cli")


# -- Every verb's answer through the typed models (see tests/official_shapes.py) --------------------------


#: Real time: the simulated machines start, run and stop pods at once.
INSTANT = ControllerSettings(pod_start_delay=0, pod_ready_delay=0, pod_run_time=0, pod_stop_delay=0)


def settled(client: kubernetes.client.ApiClient, timeout: float = 30) -> None:
    """Wait (in real time) until the controllers have run the workloads: every kind has a ready pod."""
    apps, batch = kubernetes.client.AppsV1Api(client), kubernetes.client.BatchV1Api(client)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = (
            all(d.status.available_replicas == 2 for d in apps.list_namespaced_deployment("default").items)
            and all(s.status.ready_replicas == 1 for s in apps.list_namespaced_stateful_set("default").items)
            and all(d.status.number_ready == 3 for d in apps.list_namespaced_daemon_set("default").items)
            and all(j.status.succeeded == 1 for j in batch.list_namespaced_job("default").items)
        )
        if ready:
            return
        time.sleep(0.1)
    raise AssertionError(f"The workloads have not settled in {timeout} s.")


@pytest.mark.parametrize("server", [INSTANT], indirect=True, ids=["controllers"])
def test_every_verb_with_the_controllers(
    server: ServerThread, api_client: kubernetes.client.ApiClient, kubeconfig_path: Path
) -> None:
    audit = ShapeAudit(api_client)
    audit.begin("a", str(kubeconfig_path))
    settled(api_client)
    counts = audit.finish("a")
    assert audit.problems == []
    assert audit.calls > 300
    assert counts["pods"] >= 5 * 2 + 5 + 5 * 3 + 5  # deployments, statefulsets, daemonsets, jobs
    assert counts["replicasets"] == 10  # 5 made by the deployments
    assert counts["controllerrevisions"] == 5 + 6  # of the statefulsets and daemonsets (one with nulls)
    assert counts["endpointslices"] == 5 and counts["persistentvolumes"] == 10


def test_every_verb_without_the_controllers(
    server: ServerThread, api_client: kubernetes.client.ApiClient, kubeconfig_path: Path
) -> None:
    audit = ShapeAudit(api_client)
    audit.begin("a", str(kubeconfig_path))
    counts = audit.finish("a")
    assert audit.problems == []
    assert audit.calls > 300
    assert counts["pods"] == 5 + 1 and counts["controllerrevisions"] == 0


def test_a_deleted_service_is_answered_with_the_service(
    server: ServerThread, api_client: kubernetes.client.ApiClient
) -> None:
    core = kubernetes.client.CoreV1Api(api_client)
    created = core.create_namespaced_service("default", ShapeAudit(api_client).body("services", "web"))
    deleted = core.delete_namespaced_service("web", "default")
    assert isinstance(deleted, kubernetes.client.V1Service)
    assert deleted.metadata.uid == created.metadata.uid
    assert deleted.metadata.resource_version == created.metadata.resource_version  # as it was stored
    assert deleted.spec.cluster_ip == created.spec.cluster_ip
    claim = core.create_namespaced_persistent_volume_claim(
        "default", ShapeAudit(api_client).body("persistentvolumeclaims", "c")
    )
    assert isinstance(
        core.delete_namespaced_persistent_volume_claim("c", "default"), kubernetes.client.V1PersistentVolumeClaim
    )
    assert claim.status.phase == "Pending"
    config_map = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    status = core.delete_namespaced_config_map("cm", "default")  # the other kinds answer with a Status
    assert status["kind"] == "Status" and status["details"]["uid"] == config_map.metadata.uid


def test_the_statuses_have_the_fields_that_go_always_writes(
    server: ServerThread, api_client: kubernetes.client.ApiClient
) -> None:
    audit = ShapeAudit(api_client)
    apps = kubernetes.client.AppsV1Api(api_client)
    statefulset = apps.create_namespaced_stateful_set("default", audit.body("statefulsets", "db"))
    assert (statefulset.status.replicas, statefulset.status.available_replicas) == (0, 0)
    daemonset = apps.create_namespaced_daemon_set("default", audit.body("daemonsets", "agent"))
    assert (daemonset.status.current_number_scheduled, daemonset.status.desired_number_scheduled) == (0, 0)
    assert (daemonset.status.number_misscheduled, daemonset.status.number_ready) == (0, 0)
    replicaset = apps.create_namespaced_replica_set("default", audit.body("replicasets", "rs"))
    assert replicaset.status.replicas == 0
    # A status written without them (or with nulls) gets them again, as Go writes its zero values.
    raw = apps.patch_namespaced_stateful_set_status(
        "db", "default", {"status": {"replicas": None}}, _content_type="application/merge-patch+json"
    )
    assert raw.status.replicas == 0
    service = kubernetes.client.CoreV1Api(api_client).create_namespaced_service("default", audit.body("services", "s"))
    assert service.status.load_balancer is not None


def test_empty_quantities_of_a_rendered_template_are_zeros(
    server: ServerThread, api_client: kubernetes.client.ApiClient, kubeconfig_path: Path
) -> None:
    write_with_nulls(str(kubeconfig_path), "default", "agent")
    daemonset = kubernetes.client.AppsV1Api(api_client).read_namespaced_daemon_set("agent", "default")
    [container] = daemonset.spec.template.spec.containers
    assert container.resources.limits == {"cpu": "0", "memory": "128Mi"}
    assert container.resources.requests == {"memory": "0"}
    assert container.env is None  # a null list is no list
    assert daemonset.metadata.labels is None and daemonset.metadata.annotations == {"a": "1"}
    pod = kubernetes.client.CoreV1Api(api_client).read_namespaced_pod("agent", "default")
    assert pod.spec.containers[0].resources.limits == {"cpu": "0"}
    assert pod.spec.containers[0].resources.requests == {"cpu": "0"}  # a pod requests what it limits
    assert pod.status.qos_class == "BestEffort"  # zero quantities do not count


def test_quantities_are_written_back_in_their_canonical_form(
    server: ServerThread, api_client: kubernetes.client.ApiClient, kubeconfig_path: Path
) -> None:
    api = pykube.HTTPClient(pykube.KubeConfig.from_file(str(kubeconfig_path)))
    limits = {"cpu": 0.5, "memory": "1.5Gi", "ephemeral-storage": 2000, "example.com/gpu": 1}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sized", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": limits}}]},
    }
    pykube.Pod(api, body).create()  # numbers as YAML gives them, which the typed client cannot send
    pod = kubernetes.client.CoreV1Api(api_client).read_namespaced_pod("sized", "default")
    expected = {"cpu": "500m", "memory": "1536Mi", "ephemeral-storage": "2k", "example.com/gpu": "1"}
    assert pod.spec.containers[0].resources.limits == expected
    assert pod.status.qos_class == "Guaranteed"
