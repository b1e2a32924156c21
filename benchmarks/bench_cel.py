"""The cost of CRD validation rules: creates and updates of a CRD with 20 rules against the same CRD without them.

Run: ``python benchmarks/bench_cel.py [--objects N] [--rounds R]``. The issue's budget: with 20 rules, a create
or update costs at most twice as much. Two layers are measured: the store's API (the bare write pipeline, the
strictest comparison) and HTTP over the in-memory transport (a write as an operator or kubectl makes it).
Both variants run in the same process, interleaved round by round, and CPU time is counted (the machine is
shared): each figure is the best round's, and the ratio is of those.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from kopf_sim.http.app import build_app
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import InMemoryServer

RULES: list[tuple[str, str]] = [
    ("", "self.minReplicas <= self.maxReplicas"),
    ("", "!has(self.mode) || self.mode in ['Fast', 'Slow']"),
    ("", "has(self.tls) == has(self.endpoint)"),
    ("", "self.replicas >= self.minReplicas"),
    ("storageClass", "self == oldSelf"),
    ("replicas", "self <= 10"),
    ("replicas", "self >= 0"),
    ("name", "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"),
    ("name", "self.size() <= 63"),
    ("image", "!self.endsWith(':latest')"),
    ("image", "self.contains(':')"),
    ("memory", "isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))"),
    ("endpoint", "isURL(self) && url(self).getScheme() == 'https'"),
    ("tags", "self.isSorted()"),
    ("tags", "self.all(t, t.lowerAscii() == t)"),
    ("labels", "self.all(k, !k.startsWith('kubernetes.io/'))"),
    ("ports", "self.exists(p, p.name == 'http')"),
    ("ports", "self.all(p, self.exists_one(q, q.name == p.name))"),
    ("mode", "self.size() > 0"),
    ("", "self.maxReplicas <= 100"),
]

FIELDS: dict[str, Any] = {
    "storageClass": {"type": "string"},
    "replicas": {"type": "integer"},
    "minReplicas": {"type": "integer"},
    "maxReplicas": {"type": "integer"},
    "mode": {"type": "string"},
    "tls": {"type": "boolean"},
    "name": {"type": "string", "maxLength": 63},
    "image": {"type": "string"},
    "memory": {"type": "string"},
    "endpoint": {"type": "string"},
    "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20}},
    "labels": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string"}},
    "ports": {
        "type": "array",
        "maxItems": 16,
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}},
    },
}
SPEC: dict[str, Any] = {
    "storageClass": "fast",
    "replicas": 3,
    "minReplicas": 1,
    "maxReplicas": 5,
    "mode": "Fast",
    "tls": True,
    "name": "web-1",
    "image": "nginx:1.25",
    "memory": "512Mi",
    "endpoint": "https://example.com/x",
    "tags": ["alpha", "beta"],
    "labels": {"team": "a"},
    "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
}


def crd(plural: str, *, with_rules: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "object", "properties": copy.deepcopy(FIELDS)}
    if with_rules:
        for field, rule in RULES:
            node = spec["properties"][field] if field else spec
            node.setdefault("x-kubernetes-validations", []).append({"rule": rule})
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.bench.example"},
        "spec": {
            "group": "bench.example",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural[:-1], "kind": plural[:-1].capitalize()},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


def spec_of(number: int) -> dict[str, Any]:
    """A valid spec that differs from object to object in most fields (as objects do): no result repeats."""
    return {
        **SPEC,
        "replicas": number % 7 + 2,
        "maxReplicas": number % 5 + 9,
        "name": f"web-{number}",
        "image": f"nginx:1.{number}",
        "memory": f"{number % 900 + 100}Mi",
        "endpoint": f"https://example.com/{number}",
        "tags": ["alpha", f"beta{number}"],
        "labels": {"team": f"t{number}"},
        "ports": [{"name": "http", "port": 80}, {"name": f"p{number}", "port": number % 60000 + 1024}],
    }


def body_of(plural: str, name: str, number: int) -> dict[str, Any]:
    kind = plural[:-1].capitalize()
    return {"apiVersion": "bench.example/v1", "kind": kind, "metadata": {"name": name}, "spec": spec_of(number)}


def store_round(cluster: Cluster, plural: str, round_no: int, objects: int) -> float:
    """CPU seconds for ``objects`` creates and as many updates (each update changes the spec's fields)."""
    rtype = cluster.resource("bench.example", "v1", plural)
    started = time.process_time()
    for index in range(objects):
        name = f"r{round_no}-{index}"
        number = round_no * objects + index + 1
        stored = copy.deepcopy(cluster.create(rtype, "default", body_of(plural, name, number)))
        stored["spec"] = {**spec_of(number + 1_000_000), "storageClass": stored["spec"]["storageClass"]}
        cluster.update(rtype, "default", name, stored)
    return time.process_time() - started


async def http_round(session: aiohttp.ClientSession, plural: str, round_no: int, objects: int) -> float:
    """CPU seconds for ``objects`` POSTs and as many PUTs, through the HTTP app."""
    url = f"/apis/bench.example/v1/namespaces/default/{plural}"
    started = time.process_time()
    for index in range(objects):
        name = f"h{round_no}-{index}"
        number = round_no * objects + index + 1
        async with session.post(url, json=body_of(plural, name, number)) as response:
            stored = await response.json()
            assert response.status == 201, stored
        stored["spec"] = {**spec_of(number + 1_000_000), "storageClass": stored["spec"]["storageClass"]}
        async with session.put(f"{url}/{name}", json=stored) as response:
            assert response.status == 200, await response.text()
    return time.process_time() - started


def report(layer: str, objects: int, plain: list[float], ruled: list[float]) -> None:
    per_write = 1e6 / (2 * objects)
    plain_us, ruled_us = min(plain) * per_write, min(ruled) * per_write
    print(f"{layer}: without rules {plain_us:.0f} us per write, with 20 rules {ruled_us:.0f} us per write")
    print(f"{layer}: ratio {ruled_us / plain_us:.2f}x (budget: 2x)")


def interleaved(rounds: int, one: Callable[[str, int], float]) -> tuple[list[float], list[float]]:
    one("plains", -10)  # warm-up: the rules compile on first use
    one("ruleds", -10)
    plain, ruled = [], []
    for round_no in range(rounds):
        plain.append(one("plains", round_no))
        ruled.append(one("ruleds", round_no))
    return plain, ruled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(1))
    crds = cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    cluster.create(crds, None, crd("plains", with_rules=False))
    cluster.create(crds, None, crd("ruleds", with_rules=True))
    plain, ruled = interleaved(args.rounds, lambda plural, no: store_round(cluster, plural, no, args.objects))
    report("store", args.objects, plain, ruled)

    async def over_http() -> tuple[list[float], list[float]]:
        async with InMemoryServer(build_app(cluster)) as server, server.session() as session:
            results = {
                (plural, no): await http_round(session, plural, no, args.objects)
                for no in (-10, *range(args.rounds))  # round -10: the warm-up
                for plural in ("plains", "ruleds")
            }
        return [results["plains", n] for n in range(args.rounds)], [results["ruleds", n] for n in range(args.rounds)]

    plain, ruled = asyncio.run(over_http())
    report("http", args.objects, plain, ruled)


if __name__ == "__main__":
    main()
