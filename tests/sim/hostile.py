"""Hostile and careless requests for the simulated apiserver: hand-written ones and hypothesis strategies.

Shared by the fuzz tests (``test_fuzz_http.py``, a bounded profile in CI) and the longer run in
``benchmarks/fuzz_sim.py``. A :class:`ServedSim` serves a fresh simulated cluster on 127.0.0.1 from
an event loop in a thread of its own, so that hypothesis (synchronous) can drive it request by request,
and it measures what the checks need: the status, the body, the server thread's CPU time for the
request, and whether the store changed.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import aiohttp
from hypothesis import strategies as st

from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import SeededUids
from kopf_sim.transports.serving import ServedApp

from ..loop_thread import LoopThread
from .conftest import CRD

TOKEN = "fuzz-t0ken"
JSON = "application/json"
NAMESPACED = "/api/v1/namespaces/default"
WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = (("Content-Type", JSON),)
    body: bytes = b""
    authorized: bool = True  # send the right token (unless the headers have their own Authorization)

    def describe(self) -> str:
        query = urllib.parse.urlencode(self.query)
        return f"{self.method} {self.path}{'?' + query if query else ''} {dict(self.headers)} {self.body[:200]!r}"


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: int
    content_type: str
    body: bytes
    cpu_seconds: float  # the server thread's CPU time for the request (client side included)
    store_changed: bool


def snapshot(cluster: Cluster) -> tuple[int, str]:
    state = {f"{k[0]}/{k[1]}": list(cluster.objects(k)) for k in sorted({t.storage_key for t in cluster.catalogue})}
    return cluster.rv, json.dumps(state, sort_keys=True)


def seed_objects() -> list[dict[str, Any]]:
    """What the served cluster holds at the start: something to read, patch, scale and delete."""
    return [
        CRD,
        config_map("cm1"),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}, "data": {"k": "dmFsdWU="}},
        deployment("web"),
        {"apiVersion": "acme.example/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1}},
    ]


class ServedSim(LoopThread):
    """A simulated cluster served over HTTP on 127.0.0.1 from a thread's event loop, for synchronous tests."""

    def __init__(self, *, token: str | None = TOKEN) -> None:
        super().__init__("served-sim")
        self.token = token
        self.cluster = Cluster(uids=SeededUids(7))
        self.cluster.apply_manifests(seed_objects())
        self.served: ServedApp | None = None
        self.session: aiohttp.ClientSession | None = None
        self.requests = 0

    async def _start(self) -> None:
        self.served = ServedApp(build_app(self.cluster), token=self.token)
        await self.served.start()
        self.session = aiohttp.ClientSession(auto_decompress=False)

    async def _stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        if self.served is not None:
            await self.served.stop()

    @property
    def url(self) -> str:
        assert self.served is not None
        return self.served.url

    def send(self, request: Request) -> Outcome:
        self.requests += 1
        return self.run(self._send(request))

    async def _send(self, request: Request) -> Outcome:
        assert self.session is not None
        before = snapshot(self.cluster)
        headers = dict(request.headers)
        if request.authorized and self.token is not None and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {self.token}"
        url = f"{self.url}{urllib.parse.quote(request.path, safe='/%')}"
        started = time.thread_time()
        async with self.session.request(
            request.method,
            url,
            params=list(request.query),
            headers=headers,
            data=request.body,
            skip_auto_headers=("Content-Type",),
        ) as response:
            content_type = response.headers.get("Content-Type", "")
            streaming = response.headers.get("Transfer-Encoding") == "chunked"  # a watch: the headers are enough
            body = b"" if streaming else await response.read()
        spent = time.thread_time() - started
        return Outcome(response.status, content_type, body, spent, snapshot(self.cluster) != before)


# --- valid objects, and ways to break them --------------------------------------------------------


def config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "data": {"a": "1"},
    }


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "nginx", "ports": [{"containerPort": 80}]}]},
            },
        },
    }


VALID: dict[str, dict[str, Any]] = {
    f"{NAMESPACED}/configmaps": config_map("new"),
    f"{NAMESPACED}/secrets": {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "new"},
        "data": {"k": "dmFsdWU="},
        "stringData": {"x": "y"},
    },
    f"{NAMESPACED}/pods": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "new"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}]},
    },
    "/apis/apps/v1/namespaces/default/deployments": deployment("new"),
    f"{NAMESPACED}/services": {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "new"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": 8080}]},
    },
    "/api/v1/namespaces": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}},
    f"{NAMESPACED}/events": {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "new"},
        "involvedObject": {"kind": "ConfigMap", "name": "cm1", "namespace": "default"},
        "reason": "Tested",
        "message": "hi",
        "type": "Normal",
        "count": 1,
        "firstTimestamp": "2024-01-01T00:00:00Z",
    },
    "/apis/coordination.k8s.io/v1/namespaces/default/leases": {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "new"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": "2024-01-01T00:00:00.000000Z"},
    },
    WIDGETS: {
        "apiVersion": "acme.example/v1",
        "kind": "Widget",
        "metadata": {"name": "new"},
        "spec": {"size": 3, "tags": ["a"]},
    },
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions": {
        **CRD,
        "metadata": {"name": "gadgets.acme.example"},
        "spec": {**CRD["spec"], "names": {"plural": "gadgets", "kind": "Gadget"}},
    },
}
EXISTING = {  # collection path -> an existing object's name
    f"{NAMESPACED}/configmaps": "cm1",
    f"{NAMESPACED}/secrets": "s1",
    "/apis/apps/v1/namespaces/default/deployments": "web",
    WIDGETS: "w1",
    "/api/v1/namespaces": "default",
}
OTHER_PATHS = (
    "/",
    "/api",
    "/api/v1",
    "/apis",
    "/apis/apps/v1",
    "/version",
    "/healthz",
    "/livez",
    "/readyz",
    "/openapi/v3",
    "/openapi/v3/api/v1",
    "/api/v1/pods",
    "/api/v1/watch/namespaces/default/pods",
    "/apis/apps/v1/namespaces/default/deployments/web/scale",
    f"{WIDGETS}/w1/status",
    f"{WIDGETS}/w1/scale",
    "/api/v1/namespaces/default/status",
    "/nowhere",
    "/api/v2",
    "/apis/acme.example/v1/widgets",
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def paths_in(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from paths_in(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from paths_in(value, (*prefix, index))


def replaced(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(obj))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copy


@st.composite
def broken_objects(draw: st.DrawFn, obj: dict[str, Any]) -> Any:
    """A valid object with one value (anywhere in it) replaced by any JSON value."""
    path = draw(st.sampled_from(list(paths_in(obj))))
    return replaced(obj, path, draw(json_values))


HOSTILE_BODIES = (
    b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nan"}, "data": {"a": NaN}}',
    b'{"spec": {"a": 1e400}}',
    b'{"spec": {"a": -Infinity}}',
    b"[" * 5000 + b"]" * 5000,
    b'{"a":' * 900 + b"1" + b"}" * 900,
    b'{"metadata": {"name": "\\ud800"}}',
    b"\xff\xfe\xfd",
    b'{"metadata": {"name": 5}}',
    b'{"metadata": {"labels": "x"}}',
    b'{"apiVersion": null}',
    b'{"metadata": {"finalizers": "abc"}}',
    b"",
    b"null",
    b"[]",
    b'"x"',
    b"1" * 5000,
)
YAML_BODIES = (
    b'l0: &l0 "lol"\n'
    + b"".join(b"l%d: &l%d [%s]\n" % (i, i, b", ".join([b"*l%d" % (i - 1)] * 9)) for i in range(1, 9)),
    b"a: !!binary aGVsbG8=\nb: !!set {x, y}\nc: 2001-12-14\nd: 2001-12-14t21:59:43.10-05:00\n1: x\n",
    b"a: .nan\n",
    b"a: .inf\n",
    b"? [a]\n: b\n",
    b"a: &a [*a]\n",
    b"a: *b\n",
    b"[" * 3000,
    b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y1}\ndata: {a: 1}\n",
)
CONTENT_TYPES = (
    JSON,
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "",
    "application/json; charset=utf-8",
)
QUERY_KEYS = (
    "limit",
    "continue",
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "gracePeriodSeconds",
    "propagationPolicy",
    "dryRun",
    "fieldManager",
    "force",
    "fieldValidation",
    "orphanDependents",
    "allowWatchBookmarks",
    "includeObject",
    "pretty",
)
QUERY_VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "1",
            "10" * 10,
            "1e3",
            "abc",
            "true",
            "All",
            "Strict",
            "Exact",
            "NotOlderThan",
            "Bogus",
            "a=b",
            "a in (",
            "metadata.name=x",
            "x" * 300,
            "Foreground",
            "\u00e9",
            "\U0001f600",
            "٣",
            base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":1e999,"start":"a/b"}').decode(),
            base64.urlsafe_b64encode(b"[" * 3000).decode(),
            base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":99999999999999999999999,"start":"x"}').decode(),
        ]
    ),
    st.text(max_size=30),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
)


@st.composite
def requests(draw: st.DrawFn) -> Request:
    """Any request: a method, a path (real or not), query parameters, headers, and a body of any kind."""
    collection = draw(st.sampled_from(sorted(VALID)))
    shape = draw(st.sampled_from(["collection", "object", "other", "random"]))
    if shape == "collection":
        path = collection
    elif shape == "object":
        path = f"{collection}/{EXISTING.get(collection) or draw(st.sampled_from(['new', 'x', 'Bad_Name']))}"
    elif shape == "other":
        path = draw(st.sampled_from(OTHER_PATHS))
    else:
        segments = draw(
            st.lists(
                st.text(min_size=1, max_size=10).filter(lambda s: "/" not in s and "?" not in s and "#" not in s),
                max_size=6,
            )
        )
        path = "/" + "/".join(segments)
    fitting = {"collection": ["GET", "POST", "POST", "DELETE"], "object": ["GET", "PUT", "PATCH", "PATCH", "DELETE"]}
    method = draw(
        st.sampled_from(
            fitting.get(shape, ["GET", "POST", "PUT", "PATCH", "DELETE"]) * 5
            + ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
        )
    )
    query = tuple(draw(st.lists(st.tuples(st.sampled_from(QUERY_KEYS), QUERY_VALUES), max_size=4)))
    if method == "GET" and draw(st.integers(min_value=0, max_value=3)) == 0:
        query += (("watch", "true"), ("timeoutSeconds", draw(st.sampled_from(["0", "1", str(10**18)]))))
    content_type = draw(st.sampled_from(CONTENT_TYPES))
    kind = draw(st.sampled_from(["valid", "broken", "random", "hostile", "yaml", "patch", "none"]))
    template = VALID[collection]
    body: bytes
    if kind == "valid":
        body = json.dumps(template).encode()
    elif kind == "broken":
        body = json.dumps(draw(broken_objects(template))).encode()
    elif kind == "random":
        body = json.dumps(draw(json_values)).encode()
    elif kind == "hostile":
        body = draw(st.sampled_from(HOSTILE_BODIES))
    elif kind == "yaml":
        body = draw(st.sampled_from(YAML_BODIES))
    elif kind == "patch":
        body = json.dumps(
            draw(
                st.one_of(
                    st.lists(
                        st.fixed_dictionaries(
                            {
                                "op": st.sampled_from(["add", "replace", "remove", "test", "move"]),
                                "path": st.sampled_from(
                                    ["/spec", "/metadata/labels", "/data/a", "/spec/replicas", "", "/x/y/z"]
                                ),
                                "value": json_values,
                            }
                        ),
                        max_size=3,
                    ),
                    st.fixed_dictionaries({"spec": json_values, "metadata": json_values}),
                    st.fixed_dictionaries({"spec": st.fixed_dictionaries({"replicas": json_values})}),
                )
            )
        ).encode()
    else:
        body = b""
    headers: list[tuple[str, str]] = [("Content-Type", content_type)] if content_type else []
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        body = gzip.compress(body) if draw(st.booleans()) else body
        headers.append(("Content-Encoding", "gzip"))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        headers.append(("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"))
    authorization = draw(
        st.sampled_from(
            [None] * 20 + ["Bearer", f"Bearer  {TOKEN}", "Bearer wrong", f"Basic {TOKEN}", f"bearer {TOKEN} extra"]
        )
    )
    if authorization is not None:
        headers.append(("Authorization", authorization))
    return Request(method, path, query, tuple(headers), body)


def hand_written() -> list[Request]:
    """The requests of the hostile-input report, each at least once."""
    cm_url = f"{NAMESPACED}/configmaps"
    result = [Request("POST", cm_url, body=body) for body in HOSTILE_BODIES]
    for body in YAML_BODIES:
        result.append(Request("POST", cm_url, headers=(("Content-Type", "application/yaml"),), body=body))
        result.append(
            Request(
                "PATCH",
                f"{cm_url}/cm1",
                query=(("fieldManager", "me"),),
                headers=(("Content-Type", "application/apply-patch+yaml"),),
                body=body,
            )
        )
    bad_configmaps = [
        {"data": {"a": 5}},
        {"data": "x"},
        {"binaryData": {"a": "!!"}},
        {"immutable": "yes"},
        {"metadata": {"name": "cm9", "finalizers": "abc"}},
        {"metadata": {"name": "cm9", "ownerReferences": [{"uid": 5}]}},
        {"metadata": {"name": "cm9", "ownerReferences": [None]}},
    ]
    for extra in bad_configmaps:
        body = {**config_map("cm9"), **extra}
        result.append(Request("POST", cm_url, body=json.dumps(body).encode()))
    scale = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    for replicas in (-1, 10**30, "3", 1.5, None):
        body = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": "web"},
            "spec": {"replicas": replicas},
        }
        result.append(Request("PUT", scale, body=json.dumps(body).encode()))
        result.append(
            Request(
                "PATCH",
                scale,
                headers=(("Content-Type", "application/merge-patch+json"),),
                body=json.dumps({"spec": {"replicas": replicas}}).encode(),
            )
        )
    for query in (
        (("limit", "-1"),),
        (("resourceVersionMatch", "Bogus"), ("resourceVersion", "1")),
        (("continue", base64.urlsafe_b64encode(b"[" * 3000).decode()),),
        (("continue", base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":1e999,"start":"a"}').decode()),),
        (("watch", "true"), ("timeoutSeconds", str(10**18))),
    ):
        result.append(Request("GET", cm_url, query=query))
    result.append(Request("DELETE", f"{cm_url}/cm1", query=(("gracePeriodSeconds", "abc"),)))
    result.append(Request("DELETE", f"{cm_url}/cm1", body=b'{"preconditions": "x"}'))
    for path in ("/api/v1", "/apis", "/version", "/healthz"):
        for method in ("POST", "PUT", "DELETE"):
            result.append(Request(method, path, body=b"{}"))
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    result.append(Request("POST", crds, body=json.dumps({**CRD, "spec": {**CRD["spec"], "versions": "x"}}).encode()))
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(400):
        deep = {"type": "object", "properties": {"x": deep}}
    result.append(
        Request(
            "POST",
            crds,
            body=json.dumps(
                {
                    **CRD,
                    "metadata": {"name": "deeps.acme.example"},
                    "spec": {
                        **CRD["spec"],
                        "names": {"plural": "deeps", "kind": "Deep"},
                        "versions": [
                            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": deep}}
                        ],
                    },
                }
            ).encode(),
        )
    )
    result.append(
        Request("POST", cm_url, headers=(("Content-Type", JSON), ("Content-Encoding", "gzip")), body=b"not gzip at all")
    )
    for authorization in ("Bearer", f"Bearer  {TOKEN}", "Bearer wrong"):
        result.append(Request("GET", cm_url, headers=(("Authorization", authorization),)))
    return result
