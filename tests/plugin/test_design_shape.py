"""The shape of a test from the design, unchanged, under --kopf-sim and under --kopf-real (a served simulator)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from kopf_sim.store.watching import Change

from .conftest import BASE, CONFIGS, NO_ASYNCIO, ServedCluster

ROOT = Path(__file__).parent.parent.parent

# Verbatim from DESIGN.md ("Shape of a test"); the example's create_fn writes status.create_fn.message.
DESIGN_SHAPE = """
async def test_example(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("examples/crd.yaml")
    await kopf_operator.start(paths=["examples/01-minimal/example.py"])
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                               "metadata": {"name": "ex1", "namespace": "default"},
                               "spec": {"field": "value"}})
    obj = await kopf_cluster.wait_for("kopfexamples", "ex1", namespace="default",
                                      condition=lambda o: "create_fn" in o.get("status", {}),
                                      timeout=60)   # virtual seconds under --kopf-sim
    await kopf_cluster.delete("kopfexamples", "ex1", namespace="default")
    await kopf_cluster.wait_gone("kopfexamples", "ex1", namespace="default")
    await kopf_operator.stop()
    assert kopf_operator.exception is None
"""

# The same, and what it has seen: the handler's result, its log line, no leftovers.
DETAILS = """
import kopf

async def test_details(kopf_cluster, kopf_operator, kopf_mode):
    await kopf_cluster.apply("examples/crd.yaml")
    await kopf_operator.start(paths=["examples/01-minimal/example.py"])
    assert [h.id for h in kopf_operator.registry.changing.get_all_handlers()] == ["create_fn"]
    assert kopf.get_default_registry() is not kopf_operator.registry
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                               "metadata": {"name": "ex2", "namespace": "default"}, "spec": {"a": 1}})
    obj = await kopf_cluster.wait_for("kopfexamples", "ex2", namespace="default",
                                      condition=lambda o: "create_fn" in o.get("status", {}), timeout=60)
    assert obj["status"]["create_fn"] == {"message": "hello, ex2"}
    await kopf_cluster.delete("kopfexamples", "ex2", namespace="default")
    await kopf_cluster.wait_gone("kopfexamples", "ex2", namespace="default")
    await kopf_operator.stop()
    assert (kopf_operator.exception, kopf_operator.exit_code) == (None, 0)
    assert "A new example 'ex2' with spec={'a': 1}. And here we are!" in kopf_operator.logs
    assert any(r.name == "kopf.objects" and "Handler 'create_fn' succeeded" in r.getMessage()
               for r in kopf_operator.records)
"""


def make_project(pytester: pytest.Pytester, ini: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}")
    (pytester.path / "examples" / "01-minimal").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "crd.yaml", pytester.path / "examples" / "crd.yaml")
    shutil.copy(ROOT / "examples" / "01-minimal" / "example.py", pytester.path / "examples" / "01-minimal")
    pytester.makepyfile(test_shape=DESIGN_SHAPE, test_details=DETAILS)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_design_shape_in_sim_mode(pytester: pytest.Pytester, config: str) -> None:
    args, ini = CONFIGS[config]
    make_project(pytester, ini)
    started = time.perf_counter()
    result = pytester.runpytest_inprocess(*args, *BASE, "--kopf-sim")
    elapsed = time.perf_counter() - started
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*kopf: sim mode (virtual time)*"])
    assert elapsed < 15  # two whole operators in virtual time: no real waiting (~0.5 s on an idle machine)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_design_shape_in_real_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_cluster: ServedCluster, config: str
) -> None:
    args, ini = CONFIGS[config]
    make_project(pytester, ini)
    monkeypatch.setenv("KUBECONFIG", str(served_cluster.kubeconfig))
    changes: list[Change] = []
    served_cluster.cluster.observers.append(changes.append)
    result = pytester.runpytest_inprocess(*args, *BASE, "--kopf-real")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*kopf: real mode*"])
    # The operator has worked on the served cluster: its handler's results are stored there.
    statuses = {
        change.obj["metadata"]["name"]: change.obj["status"]["create_fn"]
        for change in changes
        if change.obj.get("kind") == "KopfExample" and "create_fn" in change.obj.get("status", {})
    }
    assert statuses == {"ex1": {"message": "hello, ex1"}, "ex2": {"message": "hello, ex2"}}


def test_the_same_example_file_in_many_tests(pytester: pytest.Pytester) -> None:
    make_project(pytester, "")
    pytester.makepyfile(
        test_many="""
import pytest

@pytest.mark.parametrize("n", range(5))
async def test_loaded_again(kopf_cluster, kopf_operator, n):
    await kopf_cluster.apply("examples/crd.yaml")
    await kopf_operator.start(paths=["examples/01-minimal/example.py"])
    assert len(kopf_operator.registry.changing.get_all_handlers()) == 1
    assert await kopf_cluster.list("kopfexamples") == []   # no objects of the other tests
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": f"e{n}"}})
    await kopf_cluster.wait_for("kex", f"e{n}", condition=lambda o: o["status"]["create_fn"])
"""
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "test_many.py")
    result.assert_outcomes(passed=5)
