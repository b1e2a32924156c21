"""--kopf-real: the same fixture against a cluster of a kubeconfig (here: a simulator served on loopback)."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest
import yaml

from kopf_sim.transports.kubeconfig import write_kubeconfig

from .conftest import BASE, CONFIGS, NO_ASYNCIO, ServedCluster
from .test_sim_mode import CRD_YAML

REAL_TESTS = """
import asyncio
import pytest
import yaml
from pytest_kopf.errors import KopfApiError, KopfModeError

EXAMPLE = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"}, "spec": {"a": 1}}

async def test_objects_go_to_the_test_namespace(kopf_cluster, kopf_mode):
    assert kopf_mode == "real"
    assert kopf_cluster.namespace.startswith("kopf-test-objects-go-to-the-test-namespace-")
    await kopf_cluster.apply("crd.yaml")
    obj = await kopf_cluster.create(EXAMPLE)
    assert obj["metadata"]["namespace"] == kopf_cluster.namespace
    async def later():
        await asyncio.sleep(0.01)
        await kopf_cluster.patch("kopfexamples", "ex1", {"status": {"done": True}}, subresource="status")
    task = asyncio.create_task(later())
    obj = await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["done"], timeout=10)
    await task
    assert obj["status"] == {"done": True}
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create(EXAMPLE)
    assert (err.value.code, err.value.reason) == (409, "AlreadyExists")
    await kopf_cluster.delete("kex", "ex1")
    await kopf_cluster.wait_gone("kex", "ex1", timeout=10)

async def test_sim_only_features_fail_clearly(kopf_cluster):
    with pytest.raises(KopfModeError, match="kopf_cluster.sim .the simulator's store.* is available only in sim mode"):
        kopf_cluster.sim
    with pytest.raises(KopfModeError, match="only in sim mode"):
        await kopf_cluster.sim.advance(1)

async def test_kubeconfig_for_subprocesses(kopf_cluster):
    path = await kopf_cluster.kubeconfig()
    config = yaml.safe_load(path.read_text())
    assert config["contexts"][0]["context"]["namespace"] == kopf_cluster.namespace
    assert config["users"][0]["user"]["token"] == "inner-token"
    connection = kopf_cluster.connection
    async with connection.session() as session:
        async with session.get(connection.base_url + "/version", ssl=connection.ssl) as response:
            assert response.status == 200

@pytest.mark.kopf_sim_only
async def test_sim_only(kopf_cluster):
    raise AssertionError("must not run")

@pytest.mark.kopf_real_only
async def test_real_only(kopf_cluster):
    assert kopf_cluster.mode == "real"
"""


def namespaces(served: ServedCluster) -> list[tuple[str, bool]]:
    rtype = served.cluster.resource("", "v1", "namespaces")
    return [
        (ns["metadata"]["name"], "deletionTimestamp" in ns["metadata"])
        for ns in served.cluster.list(rtype, None)["items"]
    ]


@pytest.mark.parametrize("config", list(CONFIGS))
def test_real_mode_against_a_served_cluster(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_cluster: ServedCluster, config: str
) -> None:
    args, ini = CONFIGS[config]
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makefile(".yaml", crd=CRD_YAML)
    pytester.makepyfile(test_real=REAL_TESTS)
    monkeypatch.setenv("KUBECONFIG", str(served_cluster.kubeconfig))
    result = pytester.runpytest_inprocess(*args, *BASE, "--kopf-real", "-rs")
    result.assert_outcomes(passed=4, skipped=1)
    result.stdout.fnmatch_lines(
        ["*kopf: real mode*", "SKIPPED*kopf_sim_only: runs only with --kopf-sim (this run uses --kopf-real)"]
    )
    # The test namespaces are being deleted, the CRDs are deleted (at least, requested to be).
    left = [(name, deleting) for name, deleting in namespaces(served_cluster) if name.startswith("kopf-")]
    assert len(left) <= 4 and all(deleting for _, deleting in left)
    crds = served_cluster.cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert all("deletionTimestamp" in crd["metadata"] for crd in served_cluster.cluster.list(crds, None)["items"])


def test_real_mode_from_the_ini_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_cluster: ServedCluster
) -> None:
    pytester.makeini("[pytest]\nkopf_mode = real\n")
    pytester.makepyfile(
        textwrap.dedent("""
        async def test_mode(kopf_cluster, kopf_mode):
            assert kopf_mode == "real"
            assert kopf_cluster.namespace.startswith("kopf-test-mode-")
    """)
    )
    monkeypatch.setenv("KUBECONFIG", str(served_cluster.kubeconfig))
    pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE).assert_outcomes(passed=1)
    pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-sim").assert_outcomes(failed=1)


def test_the_named_context(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_cluster: ServedCluster, tmp_path: Path
) -> None:
    config = yaml.safe_load(served_cluster.kubeconfig.read_text())
    config["contexts"].append({"name": "broken", "context": {"cluster": "nowhere", "user": "kopf-sim"}})
    config["clusters"].append({"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}})
    config["current-context"] = "broken"
    kubeconfig = tmp_path / "two-contexts"
    kubeconfig.write_text(yaml.safe_dump(config))
    pytester.makeini("[pytest]\nkopf_context = broken\n")
    pytester.makepyfile("async def test_it(kopf_cluster):\n    pass\n")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{kubeconfig}")
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real", "--kopf-context", "kopf-sim")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*kopf: real mode (context: kopf-sim)*"])
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real")
    result.assert_outcomes(errors=1)  # the ini's context: broken


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_unreachable_cluster_fails_clearly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    port = free_port()
    write_kubeconfig(kubeconfig, server=f"http://127.0.0.1:{port}", token="x")
    pytester.makepyfile("async def test_it(kopf_cluster):\n    pass\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*The Kubernetes API at http://127.0.0.1:{port} (kubeconfig context 'kopf-sim')"
            " is unreachable: Cannot connect to host 127.0.0.1:*"
        ]
    )
    assert "aiohttp/connector.py" not in result.stdout.str()


def test_missing_kubeconfig_fails_clearly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile("async def test_it(kopf_cluster):\n    pass\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nothing-here"))
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*No kubeconfig found (looked at: */nothing-here); set KUBECONFIG.*"])
