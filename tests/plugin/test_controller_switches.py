"""The built-in controllers per test: on by default, switched by the ini file and by the kopf_controllers marker."""

from __future__ import annotations

import textwrap

import pytest

from .conftest import BASE, NO_ASYNCIO

TESTS = """
import asyncio
import pytest

async def names(kopf_cluster, resource):
    return [o["metadata"]["name"] for o in await kopf_cluster.list(resource, all_namespaces=True)]

async def test_default(kopf_cluster):
    assert await names(kopf_cluster, "nodes") == ["node-1", "node-2", "node-3"]
    assert "default" in await names(kopf_cluster, "serviceaccounts")

@pytest.mark.kopf_controllers(False)
async def test_bare(kopf_cluster):
    assert await names(kopf_cluster, "nodes") == []
    assert await names(kopf_cluster, "serviceaccounts") == []
    assert kopf_cluster.sim.controllers.enabled == frozenset()

@pytest.mark.kopf_controllers("nodes", "pods")
async def test_only_some(kopf_cluster):
    assert kopf_cluster.sim.controllers.enabled == {"nodes", "pods"}
    assert await names(kopf_cluster, "serviceaccounts") == []

@pytest.mark.kopf_controllers("-namespaces", nodes=5, pod_ready_delay=7)
async def test_tuned(kopf_cluster):
    assert len(await names(kopf_cluster, "nodes")) == 5
    assert "namespaces" not in kopf_cluster.sim.controllers.enabled
    await kopf_cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "spec": {"containers": [{"name": "c", "image": "x"}]}})
    await kopf_cluster.wait_for("pods", "p", condition=lambda p: p["status"]["conditions"][2]["status"] == "True")
    assert asyncio.get_running_loop().time() == 8

async def test_switched_in_the_test(kopf_cluster):
    kopf_cluster.sim.controllers.disable("replicasets")
    await kopf_cluster.create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                               "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                                        "template": {"metadata": {"labels": {"a": "b"}},
                                                     "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    await asyncio.sleep(10)
    assert await names(kopf_cluster, "pods") == []
    kopf_cluster.sim.controllers.enable("replicasets")
    await asyncio.sleep(10)
    assert len(await names(kopf_cluster, "pods")) == 1
"""


def test_the_switches(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_switches=TESTS)
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=5)


def test_the_ini_option_and_the_marker_on_top(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkopf_controllers = none\n")
    pytester.makepyfile(
        test_ini=textwrap.dedent("""
        import pytest

        async def test_none_by_the_ini(kopf_cluster):
            assert await kopf_cluster.list("nodes") == []

        @pytest.mark.kopf_controllers("nodes")
        async def test_the_marker_wins(kopf_cluster):
            assert len(await kopf_cluster.list("nodes")) == 3
    """)
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=2)


def test_a_bad_selection_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad=textwrap.dedent("""
        import pytest

        @pytest.mark.kopf_controllers("deploy")
        async def test_typo(kopf_cluster):
            pass

        @pytest.mark.kopf_controllers(nodez=1)
        async def test_bad_setting(kopf_cluster):
            pass
    """)
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*Bad kopf_controllers selection: Unknown controller 'deploy'; known ones are: "
            "all, none, nodes, namespaces*",
            "*Bad kopf_controllers selection: *unexpected keyword argument 'nodez'*",
        ]
    )
