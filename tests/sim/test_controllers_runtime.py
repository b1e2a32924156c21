"""The controller manager: switches, settings, determinism, watches, admission, errors, livelocks."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kopf_sim.controllers import CONTROLLERS, ControllerManager, ControllerSettings, Fate, parse_selection
from kopf_sim.controllers.pods import PodController
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.stored import HotObjects, Stored
from kopf_sim.store.watching import Change
from kopf_sim.timing import virtualtime
from kopf_sim.timing.clock import SeededUids

JsonDict = dict[str, Any]

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]},
        },
    },
}


def fresh_cluster(seed: int = 0, *, virtual: bool = True) -> Cluster:
    return (
        Cluster(clock=virtualtime.loop_clock(None), uids=SeededUids(seed))
        if virtual
        else Cluster(uids=SeededUids(seed))
    )


def create(cluster: Cluster, body: JsonDict) -> JsonDict:
    rtype = cluster.resource_for(body["apiVersion"], body["kind"])
    return cluster.create(rtype, body["metadata"].get("namespace"), body)


# -- Selections & settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("all", set(CONTROLLERS)),
        (True, set(CONTROLLERS)),
        (None, set(CONTROLLERS)),
        ("none", set()),
        (False, set()),
        ("", set(CONTROLLERS)),
        ("pods,replicasets", {"pods", "replicasets"}),
        ("all,-cronjobs,-jobs", set(CONTROLLERS) - {"cronjobs", "jobs"}),
        ("-namespaces", set(CONTROLLERS) - {"namespaces"}),
        (["none", "nodes"], {"nodes"}),
    ],
)
def test_selections(spec: Any, expected: set[str]) -> None:
    assert parse_selection(spec) == expected


def test_bad_selections_and_settings_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="Unknown controller 'deploy'; known ones are: all, none, nodes"):
        parse_selection("deploy")
    with pytest.raises(ValueError, match="Unknown controllers: nope"):
        ControllerSettings(enabled=frozenset({"nope"}))
    with pytest.raises(ValueError, match="pod_ready_delay cannot be negative"):
        ControllerSettings(pod_ready_delay=-1)
    with pytest.raises(ValueError, match="non-zero exit code"):
        Fate.fail(exit_code=0)
    with pytest.raises(ValueError, match=r"within 0\.\.255"):
        Fate(exit_code=300)
    with pytest.raises(TypeError, match="must be a Fate"):
        ControllerManager(fresh_cluster(virtual=False)).fate("a=b", "crash")  # type: ignore[arg-type]


# -- Determinism & visibility -----------------------------------------------------------------------------


def trace_of_a_rollout(seed: int) -> list[tuple[str, str, str, str]]:
    async def main() -> list[tuple[str, str, str, str]]:
        cluster = fresh_cluster(seed)
        events: list[tuple[str, str, str, str]] = []
        cluster.observers.append(
            lambda c: events.append((c.type, c.key[1], c.obj["metadata"]["name"], c.obj["metadata"]["resourceVersion"]))
        )
        manager = ControllerManager(cluster)
        manager.start()
        create(cluster, DEPLOYMENT)
        manager.fate("app=web", Fate.crash_loop(after=5))
        await asyncio.sleep(100)
        cluster.patch(
            cluster.resource("apps", "v1", "deployments"),
            "default",
            "web",
            {"spec": {"replicas": 5}},
            "application/merge-patch+json",
        )
        await asyncio.sleep(100)
        await manager.stop()
        assert manager.failures == []
        return events

    return virtualtime.run(main())


def test_the_same_seed_gives_the_same_trace() -> None:
    first, second, other = trace_of_a_rollout(1), trace_of_a_rollout(1), trace_of_a_rollout(2)
    assert len(first) > 100
    assert first == second
    assert first != other  # generated names differ by the seed


def test_the_controllers_writes_are_watch_events() -> None:
    async def main() -> None:
        cluster = fresh_cluster()
        manager = ControllerManager(cluster)
        manager.start()
        pods = cluster.resource("", "v1", "pods")
        subscription = cluster.watch(pods, "default")
        create(
            cluster,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        )
        await asyncio.sleep(5)
        phases = []
        while (event := subscription.pop()) is not None:
            managers = [m["manager"] for m in event.obj["metadata"].get("managedFields", [])]
            bound = bool(event.obj["spec"].get("nodeName"))
            phases.append((event.type, event.obj["status"]["phase"], bound, managers[-1] if managers else None))
        subscription.close()
        await manager.stop()
        # The scheduler binds through pods/binding, which writes no managed fields (as in the apiserver).
        assert phases == [
            ("ADDED", "Pending", False, None),
            ("MODIFIED", "Pending", True, None),
            ("MODIFIED", "Pending", True, "kubelet"),
            ("MODIFIED", "Running", True, "kubelet"),
            ("MODIFIED", "Running", True, "kubelet"),
        ]

    virtualtime.run(main())


def test_nothing_happens_while_nothing_changes() -> None:
    async def main() -> None:
        cluster = fresh_cluster()
        manager = ControllerManager(cluster)
        manager.start()
        create(cluster, DEPLOYMENT)
        await asyncio.sleep(10)
        rv = cluster.rv
        loop = asyncio.get_running_loop()
        assert [h for h in loop._scheduled if not h.cancelled()] == []  # type: ignore[attr-defined]
        await asyncio.sleep(86400)
        assert cluster.rv == rv
        await manager.stop()

    virtualtime.run(main())


# -- Switches ------------------------------------------------------------------------------------------------


def test_controllers_switched_off_and_on_at_run_time() -> None:
    async def main() -> None:
        cluster = fresh_cluster()
        manager = ControllerManager(cluster, ControllerSettings(enabled=parse_selection("all,-replicasets")))
        manager.start()
        create(cluster, DEPLOYMENT)
        await asyncio.sleep(10)
        assert cluster.count(("apps", "replicasets")) == 1
        assert cluster.count(("", "pods")) == 0
        manager.enable("replicasets")
        await asyncio.sleep(10)
        assert cluster.count(("", "pods")) == 3
        manager.disable("pods")
        assert "pods" not in manager.enabled
        manager.disable()
        assert manager.enabled == frozenset()
        with pytest.raises(ValueError, match="Unknown controller"):
            manager.enable("pod")
        await manager.stop()

    virtualtime.run(main())


@pytest.mark.parametrize("settings", [ControllerSettings(enabled=frozenset()), ControllerSettings(nodes=0)])
def test_a_bare_or_nodeless_cluster(settings: ControllerSettings) -> None:
    async def main() -> None:
        cluster = fresh_cluster()
        manager = ControllerManager(cluster, settings)
        manager.start()
        create(cluster, DEPLOYMENT)
        await asyncio.sleep(60)
        pods = list(cluster.objects(("", "pods")))
        assert all(not p["spec"].get("nodeName") for p in pods)
        assert len(pods) == (3 if settings.enabled else 0)
        await manager.stop()

    virtualtime.run(main())


# -- Admission, errors, livelocks ---------------------------------------------------------------------------


def test_the_controllers_writes_pass_the_admission_webhooks() -> None:
    async def main() -> None:
        cluster = fresh_cluster()
        admission = cluster.admission
        reviewed: list[str] = []

        async def deny(review: JsonDict) -> JsonDict:
            reviewed.append(review["request"]["userInfo"]["username"])
            return {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": False, "status": {"message": "no pods today"}},
            }

        admission.register("https://hooks.example/pods", deny)
        create(
            cluster,
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "pods"},
                "webhooks": [
                    {
                        "name": "pods.hooks.example",
                        "sideEffects": "None",
                        "admissionReviewVersions": ["v1"],
                        "clientConfig": {"url": "https://hooks.example/pods"},
                        "rules": [
                            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                        ],
                    }
                ],
            },
        )
        manager = ControllerManager(cluster)
        manager.start()
        create(cluster, DEPLOYMENT)
        await asyncio.sleep(60)
        assert cluster.count(("", "pods")) == 0
        assert len(reviewed) > 3  # retried with a back-off
        deployment = cluster.peek(("apps", "deployments"), "default", "web")
        assert deployment is not None
        failure = next(c for c in deployment["status"]["conditions"] if c["type"] == "ReplicaFailure")
        assert failure["reason"] == "FailedCreate"
        assert "no pods today" in failure["message"]
        assert manager.failures == []  # an API error is not a controller's failure
        await manager.stop()

    virtualtime.run(main())


def test_a_crashing_controller_is_retried_and_its_failure_kept(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[float] = []

    async def broken(self: PodController, key: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        raise RuntimeError("boom")

    monkeypatch.setattr(PodController, "reconcile", broken)

    async def main() -> None:
        cluster = fresh_cluster()
        manager = ControllerManager(cluster)
        manager.start()
        create(
            cluster,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        )
        await asyncio.sleep(10)
        assert calls == [0.0, 0.5, 1.5, 3.5, 8.5]  # a growing back-off
        assert [str(e) for e in manager.failures[:2]] == ["boom", "boom"]
        await manager.stop()

    with caplog.at_level(logging.ERROR, logger="kopf_sim.controllers"):
        virtualtime.run(main())
    assert "pods: reconciling default/p failed" in caplog.text


def test_a_livelock_is_broken_up(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[float] = []

    async def restless(self: PodController, key: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        self.manager.enqueue(self.name, key)  # as if each pass changed what it watches

    monkeypatch.setattr(PodController, "reconcile", restless)

    async def main() -> None:
        cluster = fresh_cluster()
        manager = ControllerManager(cluster)
        manager.start()
        create(
            cluster,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        )
        await asyncio.sleep(2.5)
        await manager.stop()

    with caplog.at_level(logging.WARNING, logger="kopf_sim.controllers"):
        virtualtime.run(main())
    assert calls.count(0.0) == 100 and calls.count(1.0) == 100 and calls.count(2.0) == 100
    assert "pods: default/p was reconciled 101 times at 0.0 s; pausing it for a second" in caplog.text


def test_the_observer_goes_with_the_manager() -> None:
    async def main() -> None:
        cluster = fresh_cluster()
        manager = ControllerManager(cluster)
        manager.start()
        with pytest.raises(RuntimeError, match="already started"):
            manager.start()
        assert len(cluster.observers) == 1
        await manager.stop()
        assert cluster.observers == []
        create(cluster, DEPLOYMENT)
        await asyncio.sleep(10)
        assert cluster.count(("apps", "replicasets")) == 0

    virtualtime.run(main())


def test_changes_reach_only_the_interested_controllers() -> None:
    manager = ControllerManager(fresh_cluster(virtual=False))
    stored = Stored({"metadata": {"name": "x"}}, HotObjects())
    change = Change(1, ("kopf.dev", "kopfexamples"), "ADDED", stored, None, ("", "x"))
    manager._observe(change)  # no route, no cost: nothing is queued (and no loop is needed)
    assert manager.keys("pods") == []
