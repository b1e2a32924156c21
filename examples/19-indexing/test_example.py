"""The handlers look the team's ConfigMaps up in an index that follows the cluster; a probe reports it."""
import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"
TEAM = "example.kopf.dev/team"


def configmap(name: str, team: str | None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {TEAM: team} if team else {}}, "data": {"key": "value"}}


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
    await kopf_cluster.wait_for("kopfexamples", "svc", timeout=30,
                                condition=settings_are("alpha-cache", "alpha-db", "alpha-queue"))
    await kopf_cluster.patch("kopfexamples", "svc", {"spec": {"field": "beta"}})
    await kopf_cluster.wait_for("kopfexamples", "svc", condition=settings_are("beta-db"), timeout=30)
    await kopf_cluster.delete("configmaps", "beta-db")
    await kopf_cluster.wait_for("kopfexamples", "svc", condition=settings_are(), timeout=30)

    await kopf_cluster.delete("kopfexamples", "svc")
    await kopf_cluster.wait_gone("kopfexamples", "svc", timeout=30)
    await kopf_operator.stop()
    assert kopf_operator.exception is None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def read_until(process: asyncio.subprocess.Process, text: str, lines: list[str], timeout: float = 30) -> None:
    """Read the process's output lines (into ``lines``) until one of them contains the text."""
    async with asyncio.timeout(timeout):
        while not any(text in line for line in lines):
            line = await process.stdout.readline()
            if not line:
                raise AssertionError(f"The operator has exited before {text!r}:\n" + "".join(lines))
            lines.append(line.decode())


@pytest.mark.kopf_real_time  # a real `kopf run` process, with its real clock
async def test_probe_reports_the_indices(kopf_cluster):
    await kopf_cluster.apply(CRD)
    for name, team in [("alpha-db", "alpha"), ("alpha-cache", "alpha"), ("beta-db", "beta")]:
        await kopf_cluster.create(configmap(name, team))
    await kopf_cluster.create(example("svc", "alpha"))
    await kopf_cluster.create(example("tool", "gamma"))
    kubeconfig = await kopf_cluster.kubeconfig()
    url = f"http://127.0.0.1:{free_port()}/healthz"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kopf", "run", "--standalone", "-n", kopf_cluster.namespace, "--liveness", url,
        str(HERE / "example.py"),
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    lines: list[str] = []
    try:
        # The probes may run before the indices are populated (the resource handlers never do): ask after one.
        await read_until(process, "Handler 'team_settings' succeeded.", lines)
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert await response.json() == {"teams": {"alpha": {"configmaps": 2, "examples": 1},
                                                       "beta": {"configmaps": 1, "examples": 0},
                                                       "gamma": {"configmaps": 0, "examples": 1}}}
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        output, _ = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, "".join(lines) + output.decode()
