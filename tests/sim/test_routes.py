"""The simulated apiserver's routes as data: path patterns, the tables, and what a path resolves to."""

from __future__ import annotations

import pytest

from kopf_sim.http.app import PAGES, RESOURCES, build_app
from kopf_sim.http.routes import Pattern, Route, Router, path_segments
from kopf_sim.kube import errors
from kopf_sim.store.cluster import Cluster
from kopf_sim.transports.direct import DirectClient


def test_a_pattern_matches_literals_variables_and_allowed_values() -> None:
    pattern = Pattern("/api/{version:v1}/{resource}/{name}")
    assert pattern.match(["api", "v1", "pods", "p"]) == {"version": "v1", "resource": "pods", "name": "p"}
    assert pattern.match(["api", "v2", "pods", "p"]) is None
    assert pattern.match(["apis", "v1", "pods", "p"]) is None
    assert pattern.match(["api", "v1", "pods"]) is None
    assert pattern.match(["api", "v1", "pods", "p", "status"]) is None


def test_a_tail_takes_the_rest_of_the_path_even_nothing() -> None:
    pattern = Pattern("/openapi/{tail*}")
    assert pattern.match(["openapi"]) == {"tail": ""}
    assert pattern.match(["openapi", "v9", "x"]) == {"tail": "v9/x"}
    assert pattern.match(["version"]) is None


def test_only_the_last_segment_may_be_a_tail() -> None:
    with pytest.raises(ValueError, match="only the last segment"):
        Pattern("/{tail*}/x")


def test_empty_segments_do_not_count() -> None:
    assert path_segments("//api//v1/") == ["api", "v1"]
    assert path_segments("/") == []


def test_the_first_matching_route_wins_and_a_missing_method_is_a_405() -> None:
    router: Router[str] = Router([("/a/{x:special}", {"GET": "first"}), ("/a/{x}", {"GET": "second", "PUT": "put"})])
    route, found = router.resolve(["a", "special"]) or pytest.fail("no route")
    assert (route.handler("GET"), found) == ("first", {"x": "special"})
    with pytest.raises(errors.ApiError) as raised:
        route.handler("PUT")
    assert raised.value.code == 405
    route, found = router.resolve(["a", "plain"]) or pytest.fail("no route")
    assert route.handler("PUT") == "put"
    assert router.resolve(["b"]) is None


def _resolved(path: str) -> tuple[Route[object], dict[str, str]]:
    resolved = PAGES.resolve(path_segments(path)) or RESOURCES.resolve(path_segments(path))
    assert resolved is not None, path
    return resolved  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/namespaces/ns1", {"version": "v1", "resource": "namespaces", "name": "ns1"}),
        (
            "/api/v1/namespaces/ns1/status",
            {"version": "v1", "resource": "namespaces", "name": "ns1", "subresource": "status"},
        ),
        ("/api/v1/namespaces/ns1/pods", {"version": "v1", "namespace": "ns1", "resource": "pods"}),
        (
            "/apis/g.example/v1/namespaces/ns1/status",  # only the core group's namespaces have a status here
            {"group": "g.example", "version": "v1", "namespace": "ns1", "resource": "status"},
        ),
        ("/api/v1/watch/pods", {"version": "v1", "watch": "watch", "resource": "pods"}),
        ("/api/v1/namespaces/watch/pods", {"version": "v1", "namespace": "watch", "resource": "pods"}),
        (
            "/apis/apps/v1/watch/namespaces/ns1/deployments/d1",
            {"group": "apps", "version": "v1", "watch": "watch", "namespace": "ns1", "resource": "deployments"}
            | {"name": "d1"},
        ),
        ("/apis/apps/v1", {"group": "apps", "version": "v1"}),
        ("/healthz/etcd", {"head": "healthz", "tail": "etcd"}),
    ],
)
def test_a_path_resolves_to_its_variables(path: str, params: dict[str, str]) -> None:
    _, found = _resolved(path)
    assert found == params


@pytest.mark.parametrize("path", ["/nowhere", "/api/v2/pods", "/api/v1/pods/p/status/extra"])
def test_a_path_of_no_route_is_none(path: str) -> None:
    assert PAGES.resolve(path_segments(path)) is None
    assert RESOURCES.resolve(path_segments(path)) is None


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/healthz", 200),
        ("HEAD", "/version", 200),
        ("POST", "/version", 405),  # read-only pages
        ("POST", "/api/v2", 405),
        ("GET", "/api/v2", 404),
        ("POST", "/openapi/v9", 405),
        ("GET", "/openapi/v9", 404),
        ("POST", "/nowhere", 404),
        ("GET", "/api/v1/watch/namespaces/default/configmaps", 200),
        ("POST", "/api/v1/watch/namespaces/default/configmaps", 405),  # a watch URL is for watching only
        ("DELETE", "/api/v1/watch/namespaces/default/configmaps", 405),
        ("PUT", "/api/v1/namespaces/default/configmaps", 405),
        ("HEAD", "/api/v1/namespaces/default/configmaps", 405),
        ("GET", "/api/v1/namespaces/default/status", 200),
        ("GET", "/api/v1/namespaces/default/configmaps/cm1/status", 404),  # configmaps have no status
        ("GET", "/api/v1/namespaces/default/nodes", 404),  # nodes are not namespaced
    ],
)
async def test_the_served_answers_by_route(method: str, path: str, status: int) -> None:
    client = DirectClient(build_app(Cluster()))
    response = await client.request(method, path, params={"timeoutSeconds": "0"})
    await response.close()
    assert response.status == status
