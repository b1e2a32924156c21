"""Determinism: the same seeded script in a fresh cluster gives byte-identical watch-event logs.

A script of 1,000 mixed operations is generated with ``random.Random(seed)``: creations, updates,
merge/JSON/strategic patches, status writes, deletions with and without finalizers and with every
propagation policy, finalizer removals, garbage collection via ownerReferences, namespace deletions,
label changes, with the virtual clock advanced between the operations. The operations pick their
targets from the cluster's current state, so the script depends on what the previous steps did.

What is compared: the lines of real watch streams over the in-memory transport (namespaces,
configmaps, widgets), the lines of a :class:`ChangeRecorder` of every committed change, and the
outcome (object or error Status) of every operation. A run in a separate interpreter with another
hash seed must give the same logs too (no dependency on the order of sets or dicts of strings).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp

from kopf_sim.http.app import build_app
from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import ResourceType
from kopf_sim.recording.eventlog import ChangeRecorder
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from kopf_sim.transports.inmemory import InMemoryServer
from kopf_sim.writes import preparing

SEED = 7
OPERATIONS = 1000
WATCHED = {
    "namespaces": "/api/v1/namespaces?watch=true",
    "configmaps": "/api/v1/configmaps?watch=true",
    "widgets": "/apis/example.com/v1/widgets?watch=true&labelSelector=color%21%3Dblack",
}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
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
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}
COLORS = ["red", "green", "blue", "black"]
FINALIZERS = ["example.com/one", "example.com/two"]


@dataclasses.dataclass
class Logs:
    streams: dict[str, bytes]
    recorded: str
    outcomes: str

    def digest(self) -> str:
        parts = [*(self.streams[name] for name in sorted(self.streams)), self.recorded.encode(), self.outcomes.encode()]
        return hashlib.sha256(b"\0".join(parts)).hexdigest()


class Script:
    """One run: operations chosen by a seeded generator from the cluster's current state."""

    def __init__(self, cluster: Cluster, clock: ManualClock, seed: int) -> None:
        self.cluster = cluster
        self.clock = clock
        self.rng = random.Random(seed)
        self.outcomes: list[str] = []
        self.counter = 0
        self.namespaces = cluster.resource("", "v1", "namespaces")
        self.configmaps = cluster.resource("", "v1", "configmaps")
        self.deployments = cluster.resource("apps", "v1", "deployments")

    @property
    def widgets(self) -> ResourceType:
        return self.cluster.resource("example.com", "v1", "widgets")

    # -- Helpers --

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    def live(self, rtype: ResourceType, *, terminating: bool | None = None) -> list[JsonDict]:
        objs = list(self.cluster.objects(rtype.storage_key))
        if terminating is not None:
            objs = [o for o in objs if bool(o["metadata"].get("deletionTimestamp")) == terminating]
        return objs

    def active_namespace(self) -> str:
        names = [
            ns["metadata"]["name"]
            for ns in self.live(self.namespaces, terminating=False)
            if ns["metadata"]["name"] not in ("kube-system", "kube-public", "kube-node-lease")
        ]
        return self.rng.choice(names)

    def labels(self) -> dict[str, str]:
        labels = {"color": self.rng.choice(COLORS)}
        if self.rng.random() < 0.5:
            labels["size"] = str(self.rng.randint(1, 3))
        return labels

    def finalizers(self) -> list[str]:
        return self.rng.sample(FINALIZERS, self.rng.choice([0, 0, 1, 2]))

    def owner_references(self, namespace: str) -> list[JsonDict]:
        owners = [
            o
            for rtype in (self.deployments, self.widgets)
            for o in self.live(rtype)
            if o["metadata"]["namespace"] == namespace
        ]
        if not owners or self.rng.random() < 0.4:
            return []
        chosen = self.rng.sample(owners, min(len(owners), self.rng.choice([1, 1, 2])))
        return [
            {
                "apiVersion": o["apiVersion"],
                "kind": o["kind"],
                "name": o["metadata"]["name"],
                "uid": o["metadata"]["uid"],
                "blockOwnerDeletion": True,
            }
            for o in chosen
        ]

    def pick(self, *rtypes: ResourceType) -> tuple[ResourceType, JsonDict] | None:
        candidates = [(rtype, obj) for rtype in rtypes for obj in self.live(rtype)]
        return self.rng.choice(candidates) if candidates else None

    @staticmethod
    def where(obj: JsonDict) -> tuple[str | None, str]:
        return obj["metadata"].get("namespace"), obj["metadata"]["name"]

    # -- Operations --

    def create_namespace(self) -> Any:
        if len(self.live(self.namespaces, terminating=False)) >= 8:
            return self.create_configmap()
        return self.cluster.create(
            self.namespaces, None, {"metadata": {"name": self.name("ns"), "labels": self.labels()}}
        )

    def create_configmap(self) -> Any:
        namespace = self.active_namespace()
        body = {
            "metadata": {
                "name": self.name("cm"),
                "labels": self.labels(),
                "finalizers": self.finalizers(),
                "ownerReferences": self.owner_references(namespace),
            },
            "data": {"value": str(self.rng.random())},
        }
        return self.cluster.create(self.configmaps, namespace, body, manager=self.rng.choice(["alice", "bob"]))

    def create_deployment(self) -> Any:
        namespace = self.active_namespace()
        name = self.name("deploy")
        body = {
            "metadata": {"name": name, "labels": self.labels(), "finalizers": self.finalizers()},
            "spec": {
                "replicas": self.rng.randint(1, 3),
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:1"}]},
                },
            },
        }
        return self.cluster.create(self.deployments, namespace, body, manager="alice")

    def create_widget(self) -> Any:
        namespace = self.active_namespace()
        body = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": self.name("widget"),
                "labels": self.labels(),
                "finalizers": self.finalizers(),
                "ownerReferences": self.owner_references(namespace),
            },
            "spec": {"size": self.rng.randint(1, 9)},
        }
        return self.cluster.create(self.widgets, namespace, body, manager="bob")

    def update(self) -> Any:
        picked = self.pick(self.configmaps, self.widgets)
        if picked is None:
            return None
        rtype, obj = picked
        body = json.loads(json.dumps(obj))
        if rtype is self.configmaps:
            body["data"] = {**(body.get("data") or {}), "updated": str(self.clock.current)}
        else:
            body["spec"] = {**(body.get("spec") or {}), "size": self.rng.randint(1, 9)}
        if self.rng.random() < 0.1:
            body["metadata"]["resourceVersion"] = "1"  # a stale write: 409 Conflict
        return self.cluster.update(rtype, *self.where(obj), body, manager="carol")

    def merge_patch(self) -> Any:
        picked = self.pick(self.configmaps, self.deployments, self.widgets)
        if picked is None:
            return None
        rtype, obj = picked
        patch: JsonDict = {"metadata": {"annotations": {"touched": str(self.rng.randint(0, 99))}}}
        if rtype is self.deployments:
            patch["spec"] = {"replicas": self.rng.randint(0, 5)}
        return self.cluster.patch(rtype, *self.where(obj), patch, preparing.MERGE_PATCH)

    def json_patch(self) -> Any:
        picked = self.pick(self.configmaps, self.widgets)
        if picked is None:
            return None
        rtype, obj = picked
        if rtype is self.configmaps:
            ops = [{"op": "add", "path": "/data", "value": {"json": str(self.rng.randint(0, 99))}}]
        else:
            ops = [{"op": "replace", "path": "/spec/size", "value": self.rng.randint(1, 9)}]
        if self.rng.random() < 0.1:
            ops.append({"op": "test", "path": "/metadata/name", "value": "not-this-name"})  # fails: 422
        return self.cluster.patch(rtype, *self.where(obj), ops, preparing.JSON_PATCH)

    def strategic_patch(self) -> Any:
        picked = self.pick(self.deployments, self.configmaps)
        if picked is None:
            return None
        rtype, obj = picked
        if rtype is self.deployments:
            image = f"nginx:{self.rng.randint(1, 9)}"
            containers = [{"name": "main", "image": image}]
            if self.rng.random() < 0.3:
                containers.append({"name": f"side{self.rng.randint(1, 2)}", "image": "busybox"})
            patch: JsonDict = {"spec": {"template": {"spec": {"containers": containers}}}}
        else:
            patch = {"data": {"strategic": str(self.rng.randint(0, 99))}}
        return self.cluster.patch(rtype, *self.where(obj), patch, preparing.STRATEGIC_PATCH)

    def status(self) -> Any:
        picked = self.pick(self.deployments, self.widgets)
        if picked is None:
            return None
        rtype, obj = picked
        if rtype is self.deployments:
            replicas = obj["spec"].get("replicas", 1)
            status = {
                "status": {
                    "replicas": replicas,
                    "readyReplicas": self.rng.randint(0, replicas),
                    "observedGeneration": obj["metadata"]["generation"],
                }
            }
            return self.cluster.patch(rtype, *self.where(obj), status, preparing.MERGE_PATCH, subresource="status")
        body = json.loads(json.dumps(obj))
        body["status"] = {"phase": self.rng.choice(["Pending", "Ready", "Failed"])}
        return self.cluster.update(rtype, *self.where(obj), body, subresource="status", manager="operator")

    def relabel(self) -> Any:
        picked = self.pick(self.configmaps, self.deployments, self.widgets)
        if picked is None:
            return None
        rtype, obj = picked
        labels: dict[str, str | None] = {"color": self.rng.choice(COLORS)}
        if self.rng.random() < 0.3:
            labels["size"] = None
        return self.cluster.patch(rtype, *self.where(obj), {"metadata": {"labels": labels}}, preparing.MERGE_PATCH)

    def delete(self) -> Any:
        picked = self.pick(self.configmaps, self.deployments, self.widgets)
        if picked is None:
            return None
        rtype, obj = picked
        options = {"propagationPolicy": self.rng.choice(["Background", "Foreground", "Orphan"])}
        return self.cluster.delete(rtype, *self.where(obj), options)

    def remove_finalizer(self) -> Any:
        held = [
            (rtype, obj)
            for rtype in (self.configmaps, self.deployments, self.widgets)
            for obj in self.live(rtype)
            if obj["metadata"].get("finalizers")
        ]
        if not held:
            return None
        rtype, obj = self.rng.choice(held)
        finalizers = obj["metadata"]["finalizers"]
        index = self.rng.randrange(len(finalizers))
        ops = [
            {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizers[index]},
            {"op": "remove", "path": f"/metadata/finalizers/{index}"},
        ]
        return self.cluster.patch(rtype, *self.where(obj), ops, preparing.JSON_PATCH)

    def delete_namespace(self) -> Any:
        names = [
            ns["metadata"]["name"]
            for ns in self.live(self.namespaces, terminating=False)
            if ns["metadata"]["name"].startswith("ns-")
        ]
        if not names:
            return None
        return self.cluster.delete(self.namespaces, None, self.rng.choice(names))

    OPS = {
        "create_namespace": 3,
        "create_configmap": 14,
        "create_deployment": 6,
        "create_widget": 8,
        "update": 8,
        "merge_patch": 8,
        "json_patch": 6,
        "strategic_patch": 6,
        "status": 8,
        "relabel": 8,
        "delete": 9,
        "remove_finalizer": 9,
        "delete_namespace": 1,
    }

    def step(self) -> None:
        kind = self.rng.choices(list(self.OPS), weights=list(self.OPS.values()))[0]
        try:
            result = getattr(self, kind)()
        except errors.ApiError as exc:
            result = exc.to_status()
        self.outcomes.append(json.dumps({"op": kind, "result": result}, sort_keys=True))
        self.clock.advance(self.rng.choice([0, 0.5, 1, 3, 60]))


async def run(seed: int) -> Logs:
    clock = ManualClock()
    cluster = Cluster(clock=clock, uids=SeededUids(SEED))
    recorded = io.StringIO()
    cluster.observers.append(ChangeRecorder(recorded, clock=clock))
    cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    script = Script(cluster, clock, seed)
    async with InMemoryServer(build_app(cluster)) as server, server.session() as session:
        responses: dict[str, aiohttp.ClientResponse] = {}
        for name, url in WATCHED.items():
            responses[name] = await session.get(url)  # subscribed once the headers are here
            assert responses[name].status == 200
        readers = {name: asyncio.create_task(resp.read()) for name, resp in responses.items()}
        for index in range(OPERATIONS):
            script.step()
            if index % 10 == 0:
                await asyncio.sleep(0)  # let the streams flow meanwhile, as they would
        cluster.close_watches()  # the streams send what is pending, then end
        streams = {name: await reader for name, reader in readers.items()}
        for resp in responses.values():
            resp.release()
    return Logs(streams, recorded.getvalue(), "\n".join(script.outcomes))


async def test_same_seed_same_logs() -> None:
    first = await run(SEED)  # about a second per run on an idle machine
    second = await run(SEED)

    for name in WATCHED:
        assert first.streams[name] == second.streams[name], name
    assert first.recorded == second.recorded
    assert first.outcomes == second.outcomes

    # The script did do all the things it claims to, and the logs are not trivial.
    outcomes = [json.loads(line) for line in first.outcomes.splitlines()]
    assert len(outcomes) == OPERATIONS
    succeeded = {o["op"] for o in outcomes if o["result"] is not None and o["result"].get("status") != "Failure"}
    assert succeeded == set(Script.OPS)
    failures = {o["result"]["code"] for o in outcomes if o["result"] and o["result"].get("status") == "Failure"}
    assert failures >= {409, 422}

    header, *changes = [json.loads(line) for line in first.recorded.splitlines()]
    assert (header["format"], header["version"]) == ("kopf-sim-watch-log", 1)
    assert len(changes) > OPERATIONS
    deleted_cms = [c for c in changes if c["type"] == "DELETED" and c["object"].get("kind") == "ConfigMap"]
    direct_deletes = sum(1 for o in outcomes if o["op"] == "delete")
    assert len(deleted_cms) > direct_deletes / 2  # garbage collection and namespaces took some with them
    assert any(c["type"] == "DELETED" and c["object"].get("kind") == "Namespace" for c in changes)
    # Garbage collection: a dependent was deleted after its last owner's DELETED event.
    gone: set[str] = set()
    collected = 0
    for change in changes:
        metadata = change["object"]["metadata"]
        if change["type"] == "DELETED":
            gone.add(metadata["uid"])
        elif change["type"] == "MODIFIED" and metadata.get("deletionTimestamp") and metadata.get("ownerReferences"):
            collected += all(ref["uid"] in gone for ref in metadata["ownerReferences"])
    assert collected > 0

    for name, data in first.streams.items():
        events = [json.loads(line) for line in data.splitlines()]
        assert {event["type"] for event in events} == {"ADDED", "MODIFIED", "DELETED"}, name
    # The selector of the widgets' stream turns label changes into ADDED/DELETED of the selection.
    widget_events = [json.loads(line) for line in first.streams["widgets"].splitlines()]
    assert all(
        event["object"]["metadata"]["labels"].get("color") != "black" or event["type"] == "DELETED"
        for event in widget_events
    )


async def test_another_seed_other_logs() -> None:
    assert (await run(SEED)).digest() != (await run(SEED + 1)).digest()


def test_same_logs_in_another_interpreter_with_another_hash_seed() -> None:
    here = asyncio.run(run(SEED)).digest()
    code = (
        "import asyncio, sys; sys.path.insert(0, sys.argv[1]); import test_determinism as t; "
        "print(asyncio.run(t.run(t.SEED)).digest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == here
