"""An operator's file that imports its sibling modules, loaded by path: afresh for every run, as a new process.

Its sibling builds a client of the official library at its import (``load_kube_config()`` and a
``CoreV1Api``), as real operators do: every test's cluster, every restart and every fresh start after a
crash must get a client of the cluster at hand, not the one of the first run (gone by then).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_kopf.checks import check_operator

from .conftest import BASE, NO_ASYNCIO

GALLERY = Path(__file__).parent.parent / "checks" / "gallery"
CRD = GALLERY / "crd.yaml"

HELPERS = """
    import kubernetes

    kubernetes.config.load_kube_config()
    api = kubernetes.client.CoreV1Api()  # of the cluster of the kubeconfig at the import
    LOADS = []
    LOADS.append(1)
"""

OPERATOR = """
    import kopf
    import kubernetes
    from helpers import api


    @kopf.on.create("gadgets")
    def create_fn(name, namespace, body, **_):
        child = {"metadata": {"name": f"{name}-data"}, "data": {}}
        kopf.append_owner_reference(child, owner=body)
        try:
            api.create_namespaced_config_map(namespace, child)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:  # made before a crash: the retry after the restart finds it
                raise
"""


def write_operator(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (directory / "operator.py").write_text(textwrap.dedent(OPERATOR))
    shutil.copy(CRD, directory / "crd.yaml")
    return directory / "operator.py"


TESTS = """
import operator as stdlib_operator
import sys
from pathlib import Path

OP = Path(__file__).parent / "op"


def gadget(name):
    return {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": {}}


async def handled(kopf_cluster, name):
    await kopf_cluster.create(gadget(name))
    await kopf_cluster.wait_for("configmaps", f"{name}-data", timeout=60)


async def start(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(str(OP / "crd.yaml"))
    await kopf_operator.start(paths=[str(OP / "operator.py")])


async def test_first_cluster(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    await handled(kopf_cluster, "first")


async def test_second_cluster(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    await handled(kopf_cluster, "second")


async def test_restarts_and_crashes(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    helpers = sys.modules["helpers"]
    assert str(OP) == sys.path[0]
    await handled(kopf_cluster, "one")
    await kopf_operator.restart()  # loaded anew, as a new process would
    assert sys.modules["helpers"] is not helpers and sys.modules["helpers"].LOADS == [1]
    await handled(kopf_cluster, "two")
    await kopf_operator.crash()
    await kopf_operator.restart()
    await handled(kopf_cluster, "three")
    await kopf_operator.stop()
    assert "helpers" not in sys.modules and str(OP) not in sys.path
    assert sys.modules["operator"] is stdlib_operator  # a file named operator.py does not replace the stdlib's
"""


def test_in_every_test_and_after_restarts_with_the_fixtures(pytester: pytest.Pytester) -> None:
    write_operator(pytester.path / "op")
    pytester.makepyfile(test_siblings=TESTS)
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=3)


def test_a_module_of_the_same_name_comes_back_after_the_stop(pytester: pytest.Pytester) -> None:
    write_operator(pytester.path / "op")
    (pytester.path / "helpers.py").write_text("WHOSE = 'the test directory'\n")
    pytester.makepyfile(
        test_aside="""
        import sys
        from pathlib import Path

        import helpers  # the test directory's own

        OP = Path(__file__).parent / "op"

        async def test_set_aside(kopf_cluster, kopf_operator):
            await kopf_cluster.apply(str(OP / "crd.yaml"))
            await kopf_operator.start(paths=[str(OP / "operator.py")])
            assert sys.modules["helpers"] is not helpers and hasattr(sys.modules["helpers"], "api")
            await kopf_operator.stop()
            assert sys.modules["helpers"] is helpers
        """
    )
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=1)


def test_in_every_world_of_the_checks(tmp_path: Path) -> None:
    before = list(sys.path)
    report = check_operator(
        paths=[write_operator(tmp_path / "op")],
        manifests=[CRD],
        resources=["gadgets.checks.example"],
        checks=["convergence", "idempotence", "crash-restart"],
        max_examples=5,
        max_steps=4,
        names=["obj-0"],
        settle_timeout=300,
    )
    assert report.examples >= 15
    assert report.per_check["convergence"]["reach"]["succeeded"] > 0
    assert sys.path == before and "helpers" not in sys.modules
