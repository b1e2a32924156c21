"""Startup prepares the shared state, handlers use it, the probe reports it, cleanup closes it."""
import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest
import yaml

import kopf

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


def example(name: str, field: str) -> dict:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {"field": field}}


async def test_startup_memo_and_cleanup(kopf_cluster, kopf_operator):
    await kopf_cluster.apply(CRD)
    memo = kopf.Memo()
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace], memo=memo)
    assert "The inventory is open." in kopf_operator.logs
    assert kopf_operator.settings.execution.max_workers == 4

    await kopf_cluster.create(example("one", "a"))
    await kopf_cluster.create(example("two", "b"))
    ns = kopf_cluster.namespace
    async with asyncio.timeout(30):
        while len(memo.inventory) < 2:  # noqa: ASYNC110 - the objects' handlers fill the operator's dict
            await asyncio.sleep(0.1)
    assert memo.inventory == {f"{ns}/one": "a", f"{ns}/two": "b"}

    await kopf_cluster.delete("kopfexamples", "two")
    await kopf_cluster.wait_gone("kopfexamples", "two", timeout=30)
    assert memo.inventory == {f"{ns}/one": "a"}

    await kopf_operator.restart()  # a new memo (the same object) is filled by the resuming handler
    assert f"The inventory is closed with 1 objects: ['{ns}/one']." in kopf_operator.logs
    await kopf_cluster.delete("kopfexamples", "one")
    await kopf_cluster.wait_gone("kopfexamples", "one", timeout=30)
    await kopf_operator.stop()
    assert "The inventory is closed with 0 objects: []." in kopf_operator.logs
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
async def test_kopf_run_with_login_and_liveness(kopf_cluster):
    await kopf_cluster.apply(CRD)
    await kopf_cluster.create(example("seen", "x"))
    kubeconfig = await kopf_cluster.kubeconfig()  # in sim mode: the simulated cluster, served on 127.0.0.1
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    url = f"http://127.0.0.1:{free_port()}/healthz"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kopf", "run", "--standalone", "-n", kopf_cluster.namespace, "--liveness", url,
        str(HERE / "example.py"),
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    lines: list[str] = []
    try:
        await read_until(process, f"Logged in to {server}.", lines)  # our login handler, from $KUBECONFIG
        await read_until(process, "Handler 'add_to_inventory' succeeded.", lines)
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
            assert await response.json() == {"inventory": 1}
        await kopf_cluster.delete("kopfexamples", "seen")
        await kopf_cluster.wait_gone("kopfexamples", "seen", timeout=30)  # the deletion handler has run
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        output, _ = await asyncio.wait_for(process.communicate(), timeout=30)
    log = "".join(lines) + output.decode()
    assert process.returncode == 0, log
    assert "The inventory is open." in log
    assert "The inventory is closed with 0 objects: []." in log
