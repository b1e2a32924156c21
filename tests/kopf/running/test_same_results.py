"""The same operator file gives the same observable results in-process and as ``kopf run`` over HTTP.

In-process: ``kopf.operator()`` against the in-memory simulated cluster. Out of process: ``kopf run`` against
``kopf-sim serve`` through a kubeconfig. The same scenario runs on both; the objects' status, annotations,
finalizers and the posted events are compared (uids and timestamps aside).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

import kopf
from kopf_sim.store.cluster import Cluster
from tests.helpers import example

from .conftest import kex, peek
from .test_processes import CRD, Lines, kubectl, poll, stop

pytestmark = pytest.mark.kubectl

OPERATOR = """
import kopf

@kopf.on.create('kopfexamples')
def created(body, spec, name, **_):
    kopf.info(body, reason='Created', message=f'{name} has {spec.get("field")}')
    return {'seen': spec.get('field')}

@kopf.on.update('kopfexamples')
def updated(old, new, diff, **_):
    return {'changes': len(diff), 'was': old['spec'].get('field'), 'now': new['spec'].get('field')}

@kopf.on.delete('kopfexamples')
def deleted(**_):
    pass
"""


def observable(obj: dict[str, Any] | None, events: list[dict[str, Any]]) -> dict[str, Any]:
    assert obj is not None
    annotations = dict(obj["metadata"].get("annotations") or {})
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return {
        "status": obj.get("status"),
        "annotations": annotations,
        "finalizers": obj["metadata"].get("finalizers"),
        "events": sorted((e["type"], e["reason"], e["message"]) for e in events),
    }


def done(obj: dict[str, Any] | None) -> bool:
    return bool(obj and "updated" in (obj.get("status") or {}))


def posted(events: list[dict[str, Any]]) -> bool:
    """The events are posted after the patches (in the background): the update's summary is the last one."""
    return any(e["message"].startswith("Updating is processed") for e in events)


async def in_process(tmp_path: pathlib.Path, cluster: Cluster, vault: kopf.ConnectionInfo | Any) -> dict[str, Any]:
    registry = kopf.OperatorRegistry()
    path = tmp_path / "operator_inprocess.py"
    path.write_text(OPERATOR)
    old = kopf.get_default_registry()
    kopf.set_default_registry(registry)
    try:
        spec = importlib.util.spec_from_file_location("operator_inprocess", path)
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        kopf.set_default_registry(old)
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    stop_flag: asyncio.Event = asyncio.Event()
    task = asyncio.create_task(
        kopf.operator(registry=registry, settings=settings, vault=vault, clusterwide=True, stop_flag=stop_flag)
    )
    try:
        cluster.create(kex(cluster), "default", example("ex1", field="one"))
        for _ in range(300):
            obj = peek(cluster, "default", "ex1")
            if obj and "created" in (obj.get("status") or {}):
                break
            await asyncio.sleep(0.05)
        cluster.patch(kex(cluster), "default", "ex1", {"spec": {"field": "two"}}, "application/merge-patch+json")
        events: list[dict[str, Any]] = []
        for _ in range(300):
            events = list(cluster.list(cluster.resource("", "v1", "events"), "default")["items"])
            if done(peek(cluster, "default", "ex1")) and posted(events):
                break
            await asyncio.sleep(0.05)
        return observable(peek(cluster, "default", "ex1"), events)
    finally:
        stop_flag.set()
        await asyncio.wait_for(task, timeout=30)


def out_of_process(tmp_path: pathlib.Path, env: dict[str, str]) -> dict[str, Any]:
    path = tmp_path / "operator_process.py"
    path.write_text(OPERATOR)
    kubeconfig = str(tmp_path / "kubeconfig")
    server = subprocess.Popen(
        [sys.executable, "-m", "kopf_sim", "serve", "--port", "0", "--kubeconfig", kubeconfig, "--load", CRD],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert server.stdout is not None
    try:
        Lines(server.stdout).wait_for("Kubeconfig:")
        operator = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "-A", "--standalone", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "KUBECONFIG": kubeconfig},
        )
        try:
            body = json.dumps(example("ex1", field="one"))
            subprocess.run(
                ["kubectl", "--kubeconfig", kubeconfig, "create", "-f", "-"],
                input=body,
                text=True,
                check=True,
                capture_output=True,
                timeout=30,
            )

            def get() -> dict[str, Any]:
                return dict(json.loads(kubectl(kubeconfig, "get", "kopfexample", "ex1", "-n", "default", "-o", "json")))

            poll(lambda: "created" in (get().get("status") or {}))
            kubectl(
                kubeconfig,
                "patch",
                "kopfexample",
                "ex1",
                "-n",
                "default",
                "--type=merge",
                "-p",
                '{"spec": {"field": "two"}}',
            )
            poll(lambda: done(get()))

            def events() -> list[dict[str, Any]]:
                return list(json.loads(kubectl(kubeconfig, "get", "events", "-n", "default", "-o", "json"))["items"])

            poll(lambda: posted(events()))
            return observable(get(), events())
        finally:
            stop(operator)
    finally:
        stop(server)


async def test_same_observable_results(tmp_path: pathlib.Path, cluster: Cluster, vault: Any) -> None:
    inside = await in_process(tmp_path, cluster, vault)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    outside = await asyncio.to_thread(out_of_process, tmp_path, env)
    assert inside == outside
    assert inside["status"] == {"created": {"seen": "one"}, "updated": {"changes": 1, "was": "one", "now": "two"}}
    assert inside["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
    assert "kopf.zalando.org/last-handled-configuration" in inside["annotations"]
    assert ("Normal", "Created", "ex1 has one") in inside["events"]
