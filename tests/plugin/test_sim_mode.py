"""The kopf_cluster fixture in sim mode, run through inner pytest sessions (pytester)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .conftest import BASE, CONFIGS, NO_ASYNCIO

CRD_YAML = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kopfexamples.kopf.dev
spec:
  group: kopf.dev
  scope: Namespaced
  names: {plural: kopfexamples, singular: kopfexample, kind: KopfExample, shortNames: [kex]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""

BASICS = '''
import asyncio
import pytest
from pytest_kopf.errors import KopfApiError, KopfResourceError, KopfTimeoutError

def example(name, **spec):
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": spec}

async def test_apply_and_crud(kopf_cluster):
    crds = await kopf_cluster.apply("crd.yaml")
    assert crds[0]["metadata"]["name"] == "kopfexamples.kopf.dev"
    created = await kopf_cluster.apply(example("ex1", field="value"))
    assert created[0]["metadata"]["namespace"] == kopf_cluster.namespace == "default"
    patched = await kopf_cluster.apply(example("ex1", field="other"))   # exists: patched
    assert patched[0]["spec"] == {"field": "other"}
    assert patched[0]["metadata"]["uid"] == created[0]["metadata"]["uid"]
    await kopf_cluster.apply("""
apiVersion: v1
kind: ConfigMap
metadata: {name: cm1, labels: {app: a}}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm2, labels: {app: b}}
""")
    await kopf_cluster.apply([{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm3", "labels": {"app": "a"}}}]}])
    names = [o["metadata"]["name"] for o in await kopf_cluster.list("configmaps", labels={"app": "a"})]
    assert names == ["cm1", "cm3"]
    items = await kopf_cluster.list("kopfexamples.kopf.dev")
    assert [(o["apiVersion"], o["kind"]) for o in items] == [("kopf.dev/v1", "KopfExample")]
    for resource in ("kopfexamples", "kopfexamples.kopf.dev", "kopfexample", "kex", "KopfExample"):
        assert (await kopf_cluster.get(resource, "ex1"))["spec"]["field"] == "other"
    assert await kopf_cluster.get("kopfexamples", "absent") is None
    obj = await kopf_cluster.patch("kex", "ex1", {"status": {"phase": "Done"}}, subresource="status")
    assert obj["status"] == {"phase": "Done"}
    obj = await kopf_cluster.patch("kex", "ex1", {"metadata": {"labels": {"x": "y"}}})
    assert obj["metadata"]["labels"] == {"x": "y"}
    created = await kopf_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns2"}})
    assert "namespace" not in created["metadata"]
    await kopf_cluster.create({**example("ex2"), "metadata": {"name": "ex2", "namespace": "ns2"}})
    assert await kopf_cluster.get("kex", "ex2") is None
    assert (await kopf_cluster.get("kex", "ex2", namespace="ns2"))["metadata"]["name"] == "ex2"
    assert len(await kopf_cluster.list("kex", all_namespaces=True)) == 2
    await kopf_cluster.delete("kex", "ex1")
    await kopf_cluster.wait_gone("kex", "ex1")
    assert await kopf_cluster.get("kex", "ex1") is None

async def test_api_errors(kopf_cluster):
    await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    assert (err.value.code, err.value.reason) == (409, "AlreadyExists")
    assert err.value.message == 'configmaps "cm" already exists'
    assert err.value.status["kind"] == "Status"
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.delete("configmaps", "absent")
    assert (err.value.code, err.value.reason) == (404, "NotFound")
    with pytest.raises(KopfResourceError, match='resource type "widgets"'):
        await kopf_cluster.get("widgets", "w")
    with pytest.raises(KopfResourceError, match='kind "Widget"'):
        await kopf_cluster.create({"apiVersion": "acme.example/v1", "kind": "Widget", "metadata": {"name": "w"}})

async def test_admission_denial(kopf_cluster):
    async def deny(review):
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": False,
                             "status": {"message": "red is forbidden"}}}
    kopf_cluster.sim.admission.register("https://hooks.example/validate", deny)
    await kopf_cluster.create({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "colours"},
        "webhooks": [{"name": "colours.hooks.example", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "clientConfig": {"url": "https://hooks.example/validate"},
                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["configmaps"]}]}]})
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "red"}})
    assert err.value.code == 400  # a denial with no code is a 400, as the apiserver makes it
    assert 'admission webhook "colours.hooks.example" denied the request: red is forbidden' in str(err.value)

async def test_wait_for_in_virtual_time(kopf_cluster):
    await kopf_cluster.apply("crd.yaml")
    loop = asyncio.get_running_loop()
    assert loop.time() == 0
    async def later():
        await asyncio.sleep(3600)
        await kopf_cluster.create(example("late"))
        await asyncio.sleep(30)
        await kopf_cluster.patch("kex", "late", {"status": {"done": True}}, subresource="status")
    task = asyncio.create_task(later())
    obj = await kopf_cluster.wait_for("kex", "late", condition=lambda o: o["status"]["done"], timeout=7200)
    assert obj["status"] == {"done": True}
    assert loop.time() == 3630
    assert kopf_cluster.sim.now.isoformat() == "2026-01-01T01:00:30+00:00"
    assert obj["metadata"]["creationTimestamp"] == "2026-01-01T01:00:00Z"
    await task
    await kopf_cluster.sim.advance(100)
    assert loop.time() == 3730
    assert await kopf_cluster.wait_for("kex", "late") == await kopf_cluster.get("kex", "late")

async def test_wait_for_timeout_shows_the_last_state(kopf_cluster):
    await kopf_cluster.apply("crd.yaml")
    await kopf_cluster.create(example("ex1", field="value"))
    with pytest.raises(KopfTimeoutError) as err:
        await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["done"], timeout=60)
    text = str(err.value)
    assert "Timed out after 60 s waiting for kopfexamples.kopf.dev 'ex1' in namespace 'default'" in text
    assert "field: value" in text and "KeyError" in text
    assert err.value.last["spec"] == {"field": "value"}
    assert asyncio.get_running_loop().time() == 60
    with pytest.raises(TimeoutError, match="Last seen state: absent"):
        await kopf_cluster.wait_for("kex", "absent", timeout=1)

async def test_events(kopf_cluster):
    cm = await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    for index, (kind, name) in enumerate([("ConfigMap", "cm"), ("ConfigMap", "other"), ("Secret", "cm")]):
        await kopf_cluster.create({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"ev{index}"},
            "involvedObject": {"apiVersion": "v1", "kind": kind, "name": name, "namespace": "default"},
            "reason": "Testing", "message": f"event {index}", "type": "Normal"})
    events = await kopf_cluster.events("configmaps", "cm")
    assert [e["message"] for e in events] == ["event 0"]
    assert events[0]["kind"] == "Event"

async def test_isolation_first(kopf_cluster):
    assert asyncio.get_running_loop().time() == 0
    await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "same"}})
    await asyncio.sleep(10)

async def test_isolation_second(kopf_cluster):
    assert asyncio.get_running_loop().time() == 0
    names = [cm["metadata"]["name"] for cm in await kopf_cluster.list("configmaps")]
    assert names == ["kube-root-ca.crt"]  # a fresh cluster's: nothing from the first test
    await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "same"}})

class TestInAClass:
    @pytest.mark.parametrize("n", [1, 2])
    async def test_method(self, kopf_cluster, n):
        await asyncio.sleep(n * 1000)
        assert asyncio.get_running_loop().time() == n * 1000

def test_sync_tests_get_the_cluster_too(kopf_cluster, kopf_mode):
    assert kopf_mode == "sim"
    assert kopf_cluster.sim.store.count() >= 4   # the initial namespaces
'''


@pytest.mark.parametrize("config", list(CONFIGS))
def test_basics_in_every_asyncio_configuration(pytester: pytest.Pytester, config: str) -> None:
    args, ini = CONFIGS[config]
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makefile(".yaml", crd=CRD_YAML)
    pytester.makepyfile(test_basics=BASICS)
    result = pytester.runpytest_inprocess(*args, *BASE)
    result.assert_outcomes(passed=11)


def test_report_header(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.stdout.fnmatch_lines(["kopf: sim mode (virtual time)"])


def test_deadlock_fails_fast_and_tears_down(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent("""
        import asyncio
        async def test_stuck(kopf_cluster):
            await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
            await asyncio.Event().wait()

        async def test_next(kopf_cluster):
            assert await kopf_cluster.get("configmaps", "cm") is None
    """)
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*DeadlockError: Deadlock at loop time*", "*at test_stuck*"])


def test_faults_hit_the_operator_side_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent("""
        import asyncio

        async def test_faults(kopf_cluster):
            rule = kopf_cluster.sim.faults.error(503, retry_after=3, resource="configmaps", count=1)
            kopf_cluster.sim.faults.latency(20, resource="configmaps", method="POST")
            await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
            assert asyncio.get_running_loop().time() == 0   # the harness is never faulted
            async with kopf_cluster.sim.session() as session:
                async with session.get("/api/v1/namespaces/default/configmaps/cm") as response:
                    assert response.status == 503
                    assert response.headers["Retry-After"] == "3"
                async with session.get("/api/v1/namespaces/default/configmaps/cm") as response:
                    assert response.status == 200
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm2"}}
                async with session.post("/api/v1/namespaces/default/configmaps", json=body) as response:
                    assert response.status == 201
            assert asyncio.get_running_loop().time() == 20
            assert rule.hits == 1
            kopf_cluster.sim.faults.clear()

        async def test_connection_for_operators(kopf_cluster):
            connection = kopf_cluster.connection
            assert connection.namespace == "default"
            async with connection.session(base_url=connection.base_url) as session:
                async with session.get("/api/v1/namespaces") as response:
                    names = [ns["metadata"]["name"] for ns in (await response.json())["items"]]
            assert "default" in names
    """)
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=2)


def test_recording_watch_events(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        test_rec=textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("name", ["a", "b"])
        async def test_records(kopf_cluster, name):
            await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
            await kopf_cluster.patch("configmaps", name, {"data": {"k": "v"}})
            await kopf_cluster.delete("configmaps", name)
    """)
    )
    records = tmp_path / "records"
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-record", str(records))
    result.assert_outcomes(passed=2)
    files = sorted(path.name for path in records.iterdir())
    assert files == ["test_rec.py_test_records_a.jsonl", "test_rec.py_test_records_b.jsonl"]
    header, *lines = [json.loads(line) for line in (records / files[1]).read_text().splitlines()]
    assert header["source"] == {"recorder": "pytest --kopf-record", "mode": "sim"}
    assert [(line["type"], line["object"]["metadata"]["name"]) for line in lines] == [
        ("ADDED", "b"),
        ("MODIFIED", "b"),
        ("DELETED", "b"),
    ]
    assert {line["resource"]["plural"] for line in lines} == {"configmaps"}


@pytest.mark.long_running
def test_xdist_workers_have_their_own_clusters(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        test_many=textwrap.dedent("""
        import asyncio, os, pytest

        @pytest.mark.parametrize("n", range(8))
        async def test_one(kopf_cluster, n):
            names = [cm["metadata"]["name"] for cm in await kopf_cluster.list("configmaps")]
            assert names == ["kube-root-ca.crt"]  # a fresh cluster's
            await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "same"}})
            await asyncio.sleep(60)
            assert os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw")
    """)
    )
    records = tmp_path / "records"
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, *BASE, "-n", "2", "--kopf-record", str(records), timeout=300)
    result.assert_outcomes(passed=8)
    assert len(list(records.iterdir())) == 8
