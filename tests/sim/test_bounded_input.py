"""Bodies, query parameters, continue tokens and history: bounded in cost, refused with the apiserver's words.

The costs are checked by counting (nodes built, events pending, changes kept), never by timing;
``benchmarks/bench_hostile.py`` measures the time and memory of the hostile bodies.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import aiohttp
import pytest

from kopf_sim.http import bodies, yamlbodies
from kopf_sim.http.app import ApiServer
from kopf_sim.http.bodies import MAX_DEPTH, BodyError, parse_json
from kopf_sim.http.yamlbodies import parse_yaml
from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/acme.example/v1/namespaces/default/widgets"


def bomb(levels: int = 9, width: int = 9) -> bytes:
    lines = [b'l0: &l0 "lol"']
    for level in range(1, levels):
        lines.append(b"l%d: &l%d [%s]" % (level, level, b", ".join([b"*l%d" % (level - 1)] * width)))
    return b"\n".join(lines) + b"\n"


# -- YAML ------------------------------------------------------------------------------------------


def test_an_alias_bomb_is_refused_before_it_expands(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[int] = []
    original = yamlbodies._Builder._count

    def count(self: Any, nodes: int) -> None:
        counted.append(nodes)
        original(self, nodes)

    monkeypatch.setattr(yamlbodies._Builder, "_count", count)
    with pytest.raises(BodyError, match=r"^yaml: document contains excessive aliasing$"):
        parse_yaml(bomb())
    assert sum(counted) < 10_000  # refused after a few levels, not after 9**8 nodes


@pytest.mark.parametrize(
    "document",
    [
        bomb(levels=30, width=2),  # deep rather than wide
        b"a: &a {x: 1, y: 2, z: 3}\n"
        + b"".join(
            b"b%d: &b%d {<<: [*%s, *%s]}\n" % (i, i, (b"a" if i == 0 else b"b%d" % (i - 1)), b"a") for i in range(40)
        )
        + b"c: ["
        + b", ".join([b"*b39"] * 2000)
        + b"]\n",  # merge keys, then a wide list of aliases
    ],
)
def test_relatives_of_the_alias_bomb_are_refused(document: bytes) -> None:
    with pytest.raises(BodyError):
        parse_yaml(document)


def test_a_few_aliases_are_fine() -> None:
    assert parse_yaml(b"base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\nlist: [*b, *b]\n") == {
        "base": {"x": 1},
        "use": {"y": 2, "x": 1},
        "list": [{"x": 1}, {"x": 1}],
    }


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (b"a: &a [*a]", "yaml: anchor 'a' value contains itself"),
        (b"a: *nowhere", "yaml: unknown anchor 'nowhere' referenced"),
        (b"[" * (MAX_DEPTH + 1), f"exceeded max depth of {MAX_DEPTH}"),
        (b"[" * 100_000, f"exceeded max depth of {MAX_DEPTH}"),  # libyaml's composer would crash the process
        (b"a: &a " + b"[" * 60 + b"]" * 60 + b"\nb: " + b"[" * 60 + b"*a" + b"]" * 60, "exceeded max depth of 100"),
        (b"a: .nan", "json: unsupported value: NaN"),
        (b"a: -.inf", "json: unsupported value: -Inf"),
        (b"? [a]\n: b", "error converting YAML to JSON: unsupported map key of type: []interface {}"),
        (b"~: x", "error converting YAML to JSON: unsupported map key of type: <nil>"),
        (b"a: !!binary '***'", "yaml: !!binary value contains invalid base64 data"),
        (b"a: !custom x", "yaml: cannot decode the tag '!custom'"),
        (b"a: [unclosed", "yaml: line 2: did not find expected ',' or ']'"),
    ],
)
def test_bad_yaml(document: bytes, problem: str) -> None:
    with pytest.raises(BodyError) as info:
        parse_yaml(document)
    assert info.value.message == problem


def test_yaml_comes_out_as_json_data() -> None:
    document = (
        b"binary: !!binary aGVsbG8=\nset: !!set {x, y}\ndate: 2001-12-14\nstamp: !!timestamp 2001-12-14\n"
        b"ports: 8080:80\n1: one\ntrue: yes\n1.5: x\nbig: 99999999999999999999\nhex: 0x1F\nexp: 1e3\n"
        b"empty:\nquoted: '1'\n"
    )
    assert parse_yaml(document) == {
        "binary": "hello",
        "set": {"x": None, "y": None},
        "date": "2001-12-14",
        "stamp": "2001-12-14T00:00:00Z",
        "ports": "8080:80",
        "1": "one",
        "true": True,
        "1.5": "x",
        "big": 1e20,
        "hex": 31,
        "exp": 1000.0,
        "empty": None,
        "quoted": "1",
    }
    json.dumps(parse_yaml(document), allow_nan=False)  # nothing JSON cannot hold


def test_only_the_first_yaml_document_is_read() -> None:
    assert parse_yaml(b"a: 1\n---\n: : broken") == {"a": 1}
    assert parse_yaml(b"") is None


# -- JSON ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"a": NaN}', "invalid character 'N' looking for beginning of value"),
        (b'{"a": Infinity}', "invalid character 'I' looking for beginning of value"),
        (b'{"a": -Infinity}', "invalid character 'I' in numeric literal"),
        (b'{"a": 1e400}', "json: cannot unmarshal number 1e400 into Go value of type float64"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"exceeded max depth of {MAX_DEPTH}"),
        (b"[" * 100_000 + b"]" * 100_000, f"exceeded max depth of {MAX_DEPTH}"),
    ],
)
def test_bad_json(raw: bytes, problem: str) -> None:
    with pytest.raises(BodyError) as info:
        parse_json(raw)
    assert info.value.message == problem


def test_deep_json_within_the_limit_is_fine() -> None:
    raw = b'{"a":' * (MAX_DEPTH - 1) + b"1" + b"}" * (MAX_DEPTH - 1)
    assert isinstance(parse_json(raw), dict)


def test_lone_surrogates_become_replacement_characters() -> None:
    assert parse_json(b'{"\\udc00k": ["\\ud800", "\\ud83d\\ude00"]}') == {"\ufffdk": ["\ufffd", "\U0001f600"]}
    json.dumps(parse_json(b'{"a": "\\ud800"}'), ensure_ascii=False).encode("utf-8")  # encodable now
    assert bodies.valid_strings({"x": ["\ud800"]}) == {"x": ["\ufffd"]}


# -- over HTTP -------------------------------------------------------------------------------------


async def status_of(response: aiohttp.ClientResponse) -> tuple[int, str, str]:
    data = await response.json()
    assert data["kind"] == "Status" and data["code"] == response.status
    return response.status, data["reason"], data["message"]


async def test_a_yaml_alias_bomb_over_http(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    rv = crd_cluster.rv
    for content_type, method, url in [
        ("application/yaml", "POST", CONFIGMAPS),
        ("application/apply-patch+yaml", "PATCH", f"{CONFIGMAPS}/x?fieldManager=m"),
    ]:
        async with client.request(method, url, data=bomb(), headers={"Content-Type": content_type}) as response:
            assert await status_of(response) == (
                400,
                "BadRequest",
                "error decoding YAML: yaml: document contains excessive aliasing",
            )
    assert crd_cluster.rv == rv


async def test_not_a_number_is_never_stored(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    raw = b'{"apiVersion": "acme.example/v1", "kind": "Widget", "metadata": {"name": "n"}, "spec": {"a": NaN}}'
    async with client.post(WIDGETS, data=raw, headers={"Content-Type": "application/json"}) as response:
        code, reason, message = await status_of(response)
    assert (code, reason) == (400, "BadRequest")
    assert message == (
        "the object provided is unrecognized (must be of type Widget): couldn't get version/kind; "
        "json parse error: invalid character 'N' looking for beginning of value "
        '({"apiVersion": "acme.example/v ...)'
    )
    async with client.patch(
        f"{CONFIGMAPS}/x", data=b'{"data": {"a": 1e999}}', headers={"Content-Type": "application/merge-patch+json"}
    ) as response:
        assert await status_of(response) == (
            400,
            "BadRequest",
            "error decoding patch: json: cannot unmarshal number 1e999 into Go value of type float64",
        )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"limit": "-1"}, 200),
        ({"limit": "abc"}, (400, "BadRequest", 'limit: Invalid value: "abc": must be an integer')),
        ({"limit": "9" * 30}, (400, "BadRequest", f'limit: Invalid value: "{"9" * 30}": must be an integer')),
        (
            {"resourceVersionMatch": "Bogus", "resourceVersion": "1"},
            (
                422,
                "Invalid",
                'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Bogus": '
                'supported values: "Exact", "NotOlderThan", ""',
            ),
        ),
        (
            {"resourceVersionMatch": "Exact"},
            (
                422,
                "Invalid",
                'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch '
                "is forbidden unless resourceVersion is provided",
            ),
        ),
        (
            {"resourceVersion": "soon"},
            (400, "BadRequest", 'resourceVersion: Invalid value: "soon": must be a non-negative integer'),
        ),
        (
            {"continue": base64.urlsafe_b64encode(b"[" * 3000).decode()},
            (400, "BadRequest", "continue key is not valid: the token is not JSON"),
        ),
        (
            {"continue": base64.urlsafe_b64encode(b'{"v": "meta.k8s.io/v1", "rv": 1e999, "start": "a/b"}').decode()},
            (
                400,
                "BadRequest",
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ),
        ),
        (
            {"continue": base64.urlsafe_b64encode(b'{"v": "other", "rv": 1, "start": "a/b"}').decode()},
            (400, "BadRequest", 'continue key is not valid: server does not recognize this encoded version "other"'),
        ),
        ({"continue": "%%%"}, (400, "BadRequest", "continue key is not valid: illegal base64 data")),
        ({"continue": "x" * 5000}, (400, "BadRequest", "continue key is not valid: too long")),
    ],
)
async def test_list_parameters(
    client: aiohttp.ClientSession, crd_cluster: Cluster, query: dict[str, str], expected: Any
) -> None:
    async with client.get(CONFIGMAPS, params=query) as response:
        if expected == 200:
            assert response.status == 200
        else:
            assert await status_of(response) == expected


async def test_a_negative_limit_lists_everything(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    for name in ("w1", "w2", "w3"):
        async with client.post(WIDGETS, json=widget(name)) as response:
            assert response.status == 201
    async with client.get(WIDGETS, params={"limit": "-1"}) as response:
        listing = await response.json()
    assert [item["metadata"]["name"] for item in listing["items"]] == ["w1", "w2", "w3"]
    assert "continue" not in listing["metadata"]


async def test_a_watch_with_a_huge_timeout(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    async with client.get(WIDGETS, params={"watch": "true", "timeoutSeconds": str(10**18)}) as response:
        assert response.status == 200
    async with client.get(
        WIDGETS, params={"watch": "true", "resourceVersionMatch": "Exact", "resourceVersion": "1"}
    ) as response:
        assert (await status_of(response))[:2] == (422, "Invalid")


async def test_delete_options(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    async with client.post(WIDGETS, json=widget("w1")) as response:
        assert response.status == 201
    async with client.delete(f"{WIDGETS}/w1", data=b'{"preconditions": "x"}') as response:
        assert await status_of(response) == (
            400,
            "BadRequest",
            "json: cannot unmarshal string into Go struct field DeleteOptions.preconditions of type v1.Preconditions",
        )
    async with client.delete(f"{WIDGETS}/w1", params={"gracePeriodSeconds": "abc"}) as response:
        assert await status_of(response) == (
            400,
            "BadRequest",
            'gracePeriodSeconds: Invalid value: "abc": must be an integer',
        )
    async with client.delete(f"{WIDGETS}/w1", data=b'{"gracePeriodSeconds": null}') as response:
        assert response.status == 200


@pytest.mark.parametrize(
    "path", ["/", "/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/healthz", "/openapi/v3"]
)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_read_only_paths_refuse_writes(client: aiohttp.ClientSession, path: str, method: str) -> None:
    async with client.request(method, path, json={}) as response:
        assert await status_of(response) == (
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )


async def test_a_bug_is_a_status_naming_the_request(
    client: aiohttp.ClientSession,
    crd_cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(ApiServer, "_list", broken)
    with caplog.at_level(logging.ERROR, logger="kopf_sim.http.app"):
        async with client.get(WIDGETS) as response:
            assert response.headers["Content-Type"] == "application/json"
            assert await status_of(response) == (
                500,
                "InternalError",
                f"Internal error occurred: ZeroDivisionError: division by zero (while handling GET {WIDGETS})",
            )
    assert any(record.exc_info for record in caplog.records)


# -- the history's bound ---------------------------------------------------------------------------


async def test_history_beyond_the_window_is_expired(client: aiohttp.ClientSession, crd_cluster: Cluster) -> None:
    crd_cluster.history_window = 5
    async with client.post(WIDGETS, json=widget("w1", size=0)) as response:
        first = (await response.json())["metadata"]["resourceVersion"]
    for size in range(1, 8):
        async with client.patch(
            f"{WIDGETS}/w1", json={"spec": {"size": size}}, headers={"Content-Type": "application/merge-patch+json"}
        ) as response:
            assert response.status == 200
    assert len(crd_cluster.history) == 5
    async with client.get(WIDGETS, params={"watch": "true", "resourceVersion": first}) as response:
        event = json.loads(await response.content.readline())
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


def test_a_watcher_that_falls_behind_is_let_go(crd_cluster: Cluster) -> None:
    crd_cluster.history_window = 10
    rtype = crd_cluster.resource("acme.example", "v1", "widgets")
    subscription = crd_cluster.watch(rtype, "default", resource_version=str(crd_cluster.rv))
    for index in range(20):
        crd_cluster.create(rtype, "default", widget(f"w{index}"))
    assert subscription.closed
    assert len(subscription.pending) < 10  # nothing kept for it beyond the window
