"""The handlers look the team's ConfigMaps up in an index that follows the cluster; a probe reports it."""

from pathlib import Path

import aiohttp
import pytest

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"
TEAM = "example.kopf.dev/team"


def configmap(name: str, team: str | None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {TEAM: team} if team else {}},
        "data": {"key": "value"},
    }


def example(name: str, team: str) -> dict:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {"field": team}}


def settings_are(*names: str):
    return lambda obj: obj is not None and obj.get("status", {}).get("team_settings") == list(names)


async def test_handlers_use_the_index(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    for name, team in [("alpha-db", "alpha"), ("alpha-cache", "alpha"), ("beta-db", "beta"), ("other", None)]:
        await kopf_cluster.create(configmap(name, team))
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])

    # The index is complete before the first handler is called.
    await kopf_cluster.create(example("svc", "alpha"))
    await kopf_cluster.wait_for("kopfexamples", "svc", condition=settings_are("alpha-cache", "alpha-db"), timeout=30)

    # The index follows the ConfigMaps; the timer notices within its interval (3 s).
    await kopf_cluster.create(configmap("alpha-queue", "alpha"))
    await kopf_cluster.wait_for(
        "kopfexamples", "svc", timeout=30, condition=settings_are("alpha-cache", "alpha-db", "alpha-queue")
    )
    await kopf_cluster.patch("kopfexamples", "svc", {"spec": {"field": "beta"}})
    await kopf_cluster.wait_for("kopfexamples", "svc", condition=settings_are("beta-db"), timeout=30)
    await kopf_cluster.delete("configmaps", "beta-db")
    await kopf_cluster.wait_for("kopfexamples", "svc", condition=settings_are(), timeout=30)

    await kopf_cluster.delete("kopfexamples", "svc")
    await kopf_cluster.wait_gone("kopfexamples", "svc", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


@pytest.mark.kopf_real_time  # a real `kopf run` process, with its real clock
async def test_probe_reports_the_indices(kopf_cluster, kopf_run):
    await kopf_cluster.apply(CRD)
    for name, team in [("alpha-db", "alpha"), ("alpha-cache", "alpha"), ("beta-db", "beta")]:
        await kopf_cluster.create(configmap(name, team))
    await kopf_cluster.create(example("svc", "alpha"))
    await kopf_cluster.create(example("tool", "gamma"))
    async with kopf_run(HERE / "example.py", liveness=True) as operator:  # see examples/conftest.py
        # The probes may run before the indices are populated (the resource handlers never do): ask after one.
        await operator.read_until("Handler 'team_settings' succeeded.")
        async with aiohttp.ClientSession() as session, session.get(operator.liveness_url) as response:
            assert await response.json() == {
                "teams": {
                    "alpha": {"configmaps": 2, "examples": 1},
                    "beta": {"configmaps": 1, "examples": 0},
                    "gamma": {"configmaps": 0, "examples": 1},
                }
            }
