"""--kopf-real with a kubeconfig user that runs an exec plugin: kopf's own login gets the token for all.

The served cluster (``kopf-sim serve --tls --token T``) accepts only that token; the kubeconfig has no
token, only an exec plugin (a small script printing an ``ExecCredential``). The test's own client, the
operator under test, and a subprocess given ``kopf_cluster.kubeconfig()`` all reach the cluster with it.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .conftest import BASE, NO_ASYNCIO, kopf_sim_subprocess
from .test_sim_mode import CRD_YAML

TOKEN = "exec-issued-token"

PLUGIN = textwrap.dedent(f"""
    import json, sys
    with open(sys.argv[1], "a") as calls:
        calls.write("called\\n")
    print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                      "status": {{"token": {TOKEN!r}}}}}))
""")

OPERATOR = """
import kopf

@kopf.on.create("kopfexamples")
def create_fn(**_):
    return {"created": True}
"""

TESTS = """
import subprocess
import yaml

EXAMPLE = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"}, "spec": {}}

async def test_everyone_logs_in_with_the_plugins_token(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(paths=["operator.py"])
    await kopf_cluster.create(EXAMPLE)
    obj = await kopf_cluster.wait_for("kopfexamples", "ex1", timeout=30,
                                      condition=lambda o: o["status"]["create_fn"]["created"])
    assert obj["metadata"]["namespace"] == kopf_cluster.namespace

    path = await kopf_cluster.kubeconfig()
    config = yaml.safe_load(path.read_text())
    assert config["users"][0]["user"] == {"token": "%(token)s"}   # the plugin's token, inline
    assert config["contexts"][0]["context"]["namespace"] == kopf_cluster.namespace
    if "%(kubectl)s":
        names = subprocess.run(["%(kubectl)s", "--kubeconfig", str(path), "get", "kopfexamples", "-o", "name"],
                               capture_output=True, text=True, timeout=60, check=True).stdout.split()
        assert names == ["kopfexample.kopf.dev/ex1"]
"""


@pytest.fixture
def served_with_token(tmp_path: Path) -> Iterator[Path]:
    """``kopf-sim serve --tls --token T`` on 127.0.0.1 (a free port), its kubeconfig; stopped at the end."""
    with kopf_sim_subprocess(tmp_path / "served-kubeconfig", "--tls", "--token", TOKEN) as kubeconfig:
        yield kubeconfig


def test_an_exec_plugin_user(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_with_token: Path, tmp_path: Path
) -> None:
    calls = tmp_path / "calls"
    (tmp_path / "plugin.py").write_text(PLUGIN)
    config = yaml.safe_load(served_with_token.read_text())
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "interactiveMode": "Never",
            "args": [str(tmp_path / "plugin.py"), str(calls)],
        }
    }
    kubeconfig = tmp_path / "exec-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))

    pytester.makefile(".yaml", crd=CRD_YAML)
    pytester.makepyfile(operator=OPERATOR, test_exec=TESTS % {"token": TOKEN, "kubectl": shutil.which("kubectl") or ""})
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real")
    result.assert_outcomes(passed=1)
    assert calls.read_text().count("called") >= 1


def test_a_token_that_the_cluster_refuses(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_with_token: Path, tmp_path: Path
) -> None:
    config = yaml.safe_load(served_with_token.read_text())
    config["users"][0]["user"] = {"token": "wrong"}
    kubeconfig = tmp_path / "wrong-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    pytester.makepyfile("async def test_it(kopf_cluster):\n    pass\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*The Kubernetes API at https://127.0.0.1:* refuses the credentials of the "
            "kubeconfig context 'kopf-sim' (*wrong-kubeconfig): 401 Unauthorized"
        ]
    )
    assert "Traceback" not in result.stdout.str() and "realcluster.py" not in result.stdout.str()
