"""``kopf_cluster.replay`` and ``prepare_replay`` in a test; ``--kopf-record`` in real mode writes the same logs."""

from __future__ import annotations

import asyncio
import io
import textwrap
from pathlib import Path

import pytest

from kopf_sim.manifests import read_manifest
from kopf_sim.recording.eventlog import ChangeRecorder
from kopf_sim.recording.replaying import LogError, read_log
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import ManualClock, SeededUids
from pytest_kopf.cluster import KopfCluster

from .conftest import BASE, NO_ASYNCIO, ServedCluster

CRD = Path(__file__).resolve().parents[2] / "examples" / "crd.yaml"
MERGE = "application/merge-patch+json"


async def own_configmaps(kopf_cluster: KopfCluster) -> list[dict[str, object]]:
    """The ConfigMaps of the test (every namespace also has the cluster's kube-root-ca.crt)."""
    return [cm for cm in await kopf_cluster.list("configmaps") if cm["metadata"]["name"] != "kube-root-ca.crt"]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A log of a KopfExample created, changed twice and deleted, over 30 seconds, and of a ConfigMap."""
    clock = ManualClock()
    cluster = Cluster(clock=clock, uids=SeededUids(3))
    cluster.apply_manifests(read_manifest(CRD))
    stream = io.StringIO()
    cluster.observers.append(ChangeRecorder(stream, clock=clock))
    examples = cluster.resource("kopf.dev", "v1", "kopfexamples")
    cluster.create(
        examples,
        "default",
        {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"}, "spec": {"field": "a"}},
    )
    clock.advance(10)
    cluster.patch(examples, "default", "ex1", {"spec": {"field": "b"}, "metadata": {"labels": {"l": "1"}}}, MERGE)
    cluster.create(cluster.resource("", "v1", "configmaps"), "default", {"metadata": {"name": "cm"}})
    clock.advance(10)
    cluster.patch(examples, "default", "ex1", {"spec": {"field": "c"}}, MERGE)
    clock.advance(10)
    cluster.delete(examples, "default", "ex1")
    path = tmp_path / "log.jsonl"
    path.write_text(stream.getvalue())
    return path


@pytest.mark.kopf_sim_only
async def test_a_replay_in_virtual_time(kopf_cluster: KopfCluster, log: Path) -> None:
    await kopf_cluster.apply(CRD)
    seen: list[tuple[float, str, str]] = []
    loop = asyncio.get_running_loop()
    kopf_cluster.sim.store.observers.append(
        lambda change: seen.append((loop.time(), change.type, change.obj["metadata"]["name"]))
    )
    start = loop.time()
    replay = await kopf_cluster.replay(log, resources=["kex"])  # a short name, as kubectl takes it
    assert [(t - start, kind, name) for t, kind, name in seen] == [
        (0.0, "ADDED", "ex1"),
        (10.0, "MODIFIED", "ex1"),
        (20.0, "MODIFIED", "ex1"),
        (30.0, "DELETED", "ex1"),
    ]
    assert len(replay.steps) == 4
    assert await own_configmaps(kopf_cluster) == []  # not asked for

    seen.clear()
    await kopf_cluster.replay(log, speed=10.0, until=15.0)
    assert [(round(t - seen[0][0], 6), kind, name) for t, kind, name in seen] == [
        (0.0, "ADDED", "ex1"),
        (1.0, "MODIFIED", "ex1"),
        (1.0, "ADDED", "cm"),
    ]


async def test_step_by_step(kopf_cluster: KopfCluster, log: Path) -> None:
    await kopf_cluster.apply(CRD)
    replay = await kopf_cluster.prepare_replay(log)
    assert [(step.action, step.resource.plural, step.t) for step in replay] == [
        ("create", "kopfexamples", 0.0),
        ("update", "kopfexamples", 10.0),
        ("create", "configmaps", 10.0),
        ("update", "kopfexamples", 20.0),
        ("delete", "kopfexamples", 30.0),
    ]
    fields = []
    for step in replay:
        if step.action == "delete":
            break
        await replay.apply(step)
        obj = await kopf_cluster.get("kopfexamples", "ex1")
        fields.append(obj["spec"]["field"])
        await kopf_cluster.patch("kopfexamples", "ex1", {"metadata": {"annotations": {"between": str(len(fields))}}})
    assert fields == ["a", "b", "b", "c"]
    obj = await kopf_cluster.get("kopfexamples", "ex1")
    assert obj["metadata"]["annotations"] == {"between": "4"} and obj["metadata"]["labels"] == {"l": "1"}
    assert len(list(replay)) == 1
    await replay.run()
    assert await kopf_cluster.get("kopfexamples", "ex1") is None


async def test_a_log_that_does_not_fit_the_cluster(kopf_cluster: KopfCluster, log: Path) -> None:
    with pytest.raises(LogError) as info:
        await kopf_cluster.replay(log)  # no CRD applied
    assert (
        str(info.value).splitlines()[1]
        == f"  {log}:2: unknown resource kopfexamples.kopf.dev (version v1): the cluster does not serve it "
        f"(create its CRD before the replay, or replay only other resources)"
    )
    assert await own_configmaps(kopf_cluster) == []  # nothing was written


REAL_TEST = textwrap.dedent("""
    async def test_recorded(kopf_cluster):
        await kopf_cluster.apply(CRD)
        await kopf_cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
        await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"},
                                   "spec": {"field": "a"}})
        await kopf_cluster.patch("configmaps", "cm", {"data": {"k": "v"}})
        await kopf_cluster.patch("kopfexamples", "ex1", {"spec": {"field": "b"}})
        await kopf_cluster.delete("configmaps", "cm")
""")

SIM_TEST = textwrap.dedent("""
    async def test_replayed(kopf_cluster):  # no CRD applied: the log has it, before the first KopfExample
        seen = []
        kopf_cluster.sim.store.observers.append(lambda c: seen.append((c.type, c.key[1], c.obj["metadata"]["name"])))
        await kopf_cluster.replay(LOG, speed=None)
        assert [change for change in seen if change[1:] == ("configmaps", "cm")] == [
            ("ADDED", "configmaps", "cm"), ("MODIFIED", "configmaps", "cm"), ("DELETED", "configmaps", "cm")]
        obj = await kopf_cluster.get("kopfexamples", "ex1", namespace=NAMESPACE)  # the log's namespace, made for it
        assert obj["spec"]["field"] == "b"
""")


def test_recording_in_real_mode_and_replaying_in_sim_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_cluster: ServedCluster, tmp_path: Path
) -> None:
    records = tmp_path / "records"
    pytester.makepyfile(test_real=f"CRD = {str(CRD)!r}\n" + REAL_TEST)
    monkeypatch.setenv("KUBECONFIG", str(served_cluster.kubeconfig))
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real", "--kopf-record", str(records))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"kopf: real mode (context: current), recording into {records}"])
    [path] = records.iterdir()
    log = read_log(path)
    [namespace] = log.headers[0]["source"]["namespaces"]
    assert log.headers[0]["source"] == {
        "recorder": "pytest --kopf-record",
        "mode": "real",
        "server": served_cluster.url,
        "namespaces": [namespace],
    }
    changes = [
        (e.type, e.resource.plural, e.object["metadata"]["name"])
        for e in log.changes()
        if e.resource.plural in ("configmaps", "kopfexamples")
    ]
    assert [change for change in changes if change[1:] == ("configmaps", "cm")] == [
        ("ADDED", "configmaps", "cm"),
        ("MODIFIED", "configmaps", "cm"),
        ("DELETED", "configmaps", "cm"),
    ]
    assert ("ADDED", "kopfexamples", "ex1") in changes  # a resource that a CRD defined during the test
    crds = [e.object["metadata"]["name"] for e in log.changes() if e.resource.plural == "customresourcedefinitions"]
    assert crds == ["kopfexamples.kopf.dev"]  # cluster-scoped, but the log would not replay alone without it
    assert {
        e.object["metadata"].get("namespace") for e in log.changes() if e.resource.plural != "customresourcedefinitions"
    } == {namespace}

    monkeypatch.delenv("KUBECONFIG")
    pytester.makepyfile(test_real="")
    pytester.makepyfile(test_sim=f"CRD, LOG, NAMESPACE = {str(CRD)!r}, {str(path)!r}, {namespace!r}\n" + SIM_TEST)
    pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-sim").assert_outcomes(passed=1)
