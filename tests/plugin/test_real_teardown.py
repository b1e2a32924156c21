"""--kopf-real against ``kopf-sim serve``: every test leaves objects with finalizers; the next test never sees them.

Also: ``start()`` returns when the operator is ready for admission, in real mode too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import BASE, NO_ASYNCIO, kopf_sim_subprocess

ROOT = Path(__file__).parent.parent.parent

CONFTEST = """
import random

def pytest_collection_modifyitems(items):
    random.Random(13).shuffle(items)   # a fixed shuffled order, not the order of the file
"""

OPERATOR = """
import kopf

@kopf.on.create("kopfexamples")
def create_fn(**_):
    return {"created": True}

@kopf.on.delete("kopfexamples")   # its finalizer holds the objects until it has run
def delete_fn(**_):
    pass
"""

TESTS = """
import pytest

def example(name):
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {}}

FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"

@pytest.mark.parametrize("stop", [False, True])
@pytest.mark.parametrize("n", range(10))
async def test_leaves_objects_with_finalizers(kopf_cluster, kopf_operator, n, stop):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(paths=["operator.py"])
    for name in ("ex-a", "ex-b"):
        await kopf_cluster.create(example(name))
        await kopf_cluster.wait_for("kopfexamples", name, timeout=30,
                                    condition=lambda o: FINALIZER in o["metadata"].get("finalizers", ()))
    if stop:
        await kopf_operator.stop()   # the finalizers stay: nobody will release them
"""


@pytest.fixture
def kopf_sim_serve(tmp_path: Path) -> Iterator[Path]:
    """``kopf-sim serve`` on 127.0.0.1 (a free port), its kubeconfig; stopped at the end."""
    with kopf_sim_subprocess(tmp_path / "served-kubeconfig") as kubeconfig:
        yield kubeconfig


@pytest.mark.long_running
def test_twenty_real_tests_leaving_finalizers_pass_in_a_shuffled_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kopf_sim_serve: Path
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kopf_sim_serve))
    pytester.makeconftest(CONFTEST)
    (pytester.path / "crd.yaml").write_text((ROOT / "examples" / "crd.yaml").read_text())
    (pytester.path / "operator.py").write_text(OPERATOR)
    pytester.makepyfile(test_leftovers=TESTS)
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real")
    result.assert_outcomes(passed=20)

    # Nothing is left: no test namespaces, no CRDs, no objects.
    env = {**os.environ, "KUBECONFIG": str(kopf_sim_serve)}
    left = subprocess.run(
        ["kubectl", "get", "namespaces,crds", "-o", "name"], env=env, capture_output=True, text=True, timeout=60
    )
    assert left.returncode == 0, left.stderr
    assert [line for line in left.stdout.split() if "kopf-" in line or "kopfexamples" in line] == []


ADMISSION = """
import asyncio
import pytest
from pytest_kopf.errors import KopfApiError

async def test_validated_right_after_start(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(paths=["admission.py"])
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "bad"},
                                   "spec": {"field": "forbidden"}})
    assert "must not be 'forbidden'" in str(err.value)
    obj = await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                                     "metadata": {"name": "good"}, "spec": {}})
    assert obj["spec"]["duration"] == "1m"   # mutated
"""


@pytest.mark.parametrize("mode", ["--kopf-sim", "--kopf-real"])
def test_an_object_created_right_after_start_is_validated(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kopf_sim_serve: Path, mode: str
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kopf_sim_serve))
    (pytester.path / "crd.yaml").write_text((ROOT / "examples" / "crd.yaml").read_text())
    (pytester.path / "admission.py").write_text((ROOT / "examples" / "02-admission" / "example.py").read_text())
    pytester.makepyfile(test_admission=ADMISSION)
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, mode)
    result.assert_outcomes(passed=1)
