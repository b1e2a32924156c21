"""Recording a cluster over its API (``kopf-sim record``): the current state first, then every watch event.

The cluster is a simulator served on 127.0.0.1 by the test itself (HTTPS and a token, as a real one);
the recorder talks to it as to any cluster. These tests run in real time: a few tenths of a second.
"""

from __future__ import annotations

import asyncio
import io
import os
import pty
import re
import select
import ssl
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from kopf_sim.cli import main
from kopf_sim.http import faults
from kopf_sim.http.app import ServerOptions, build_app
from kopf_sim.recording.apiclient import HttpApi, app_api
from kopf_sim.recording.capture import Capture, CaptureError
from kopf_sim.recording.eventlog import LogWriter
from kopf_sim.recording.replaying import LogEvent, parse_log, prepare, read_log
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing.clock import system_clock
from kopf_sim.transports.serving import ServedApp
from tests.helpers import widget

from .conftest import CRD

KOPF_SIM = Path(sys.executable).parent / "kopf-sim"
TOKEN = "recorder-token"


class Served:
    def __init__(self, cluster: Cluster, served: ServedApp, injector: faults.FaultInjector, kubeconfig: Path) -> None:
        self.cluster, self.served, self.faults, self.kubeconfig = cluster, served, injector, kubeconfig

    def api(self, token: str = TOKEN) -> HttpApi:
        assert self.served.ca_pem is not None
        trusted = ssl.create_default_context(cadata=self.served.ca_pem.decode())
        return HttpApi(self.served.url, ssl_context=trusted, headers=lambda: {"Authorization": f"Bearer {token}"})

    def configmap(self, name: str, namespace: str = "default", **data: str) -> None:
        self.cluster.create(
            self.cluster.resource("", "v1", "configmaps"), namespace, {"metadata": {"name": name}, "data": data}
        )


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    cluster = Cluster()
    cluster.create(cluster.resource("", "v1", "namespaces"), None, {"metadata": {"name": "other"}})
    app = build_app(cluster, ServerOptions(bookmark_interval=0.2))
    injector = faults.FaultInjector()
    faults.install(app, injector)
    async with ServedApp(app, token=TOKEN, tls=True) as server:  # as a real cluster: its CA in the kubeconfig
        server.write_kubeconfig(tmp_path / "kubeconfig")
        yield Served(cluster, server, injector, tmp_path / "kubeconfig")


async def until(condition: Callable[[], bool], timeout: float = 10) -> None:
    """Poll (real time: the recorder is a client over a socket) until the condition holds."""
    for _ in range(int(timeout * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not in {timeout} s: {condition}")


def recorded(stream: io.StringIO) -> list[LogEvent]:
    return list(parse_log(stream.getvalue()).events)


def summary(events: list[LogEvent]) -> list[tuple[str, str, bool]]:
    return [
        (event.type, event.object["metadata"]["name"], event.relisted) for event in events if event.type != "BOOKMARK"
    ]


async def test_the_current_state_first_then_the_changes(served: Served) -> None:
    served.configmap("before", a="1")
    served.configmap("elsewhere", namespace="other")
    secrets = served.cluster.resource("", "v1", "secrets")
    served.cluster.create(secrets, "default", {"metadata": {"name": "creds"}, "data": {"pw": "cHc="}})
    stream = io.StringIO()
    writer = LogWriter(stream, started=system_clock(), source={"recorder": "test"})
    capture = Capture(served.api(), writer, resources=["cm", "Secret"], namespaces=["default"])
    await capture.start()
    assert summary(recorded(stream)) == [("ADDED", "before", False), ("ADDED", "creds", False)]

    served.configmap("after")
    served.cluster.patch(
        served.cluster.resource("", "v1", "configmaps"),
        "default",
        "before",
        {"data": {"a": "2"}},
        "application/merge-patch+json",
    )
    served.cluster.delete(served.cluster.resource("", "v1", "configmaps"), "default", "before")
    served.configmap("not-recorded", namespace="other")
    await until(lambda: len(summary(recorded(stream))) == 5)
    await until(lambda: any(event.type == "BOOKMARK" for event in recorded(stream)))  # every 0.2 s here
    assert capture.stats().objects == 3 and capture.stats().resources == 2
    await capture.stop()
    await capture.api.close()

    events = recorded(stream)
    assert summary(events) == [
        ("ADDED", "before", False),
        ("ADDED", "creds", False),
        ("ADDED", "after", False),
        ("MODIFIED", "before", False),
        ("DELETED", "before", False),
    ]
    assert [event.t for event in events] == sorted(event.t for event in events)
    assert {(e.resource.group, e.resource.version, e.resource.plural) for e in events} == {
        ("", "v1", "configmaps"),
        ("", "v1", "secrets"),
    }
    assert events[1].object["data"] == {"pw": ""}  # redacted
    assert events[0].object["apiVersion"] == "v1" and events[0].object["kind"] == "ConfigMap"  # as lists omit them


async def test_a_410_is_logged_and_the_missed_changes_are_found_by_a_relist(served: Served) -> None:
    served.configmap("kept")
    served.configmap("gone")
    served.faults.expire_watch(resource="configmaps", count=1)
    stream = io.StringIO()
    capture = Capture(served.api(), LogWriter(stream, started=system_clock(), source={}), resources=["configmaps"])
    await capture.start()
    # Before the first watch is even sent (its task has not run yet): these changes come only through the relist.
    served.configmap("new")
    served.cluster.delete(served.cluster.resource("", "v1", "configmaps"), "default", "gone")
    await until(lambda: len(recorded(stream)) >= 5)
    served.configmap("later")  # and the next watch brings the changes as usual
    await until(lambda: any(event.object.get("metadata", {}).get("name") == "later" for event in recorded(stream)))
    await capture.stop()
    await capture.api.close()

    events = [event for event in recorded(stream) if event.type != "BOOKMARK"]
    assert [(event.type, event.object.get("code")) for event in events if event.type == "ERROR"] == [("ERROR", 410)]
    assert summary([event for event in events if event.type != "ERROR"]) == [
        ("ADDED", "gone", False),
        ("ADDED", "kept", False),
        ("ADDED", "new", True),
        ("DELETED", "gone", True),
        ("ADDED", "later", False),
    ]


async def test_resources_defined_later_are_recorded_with_all_resources(served: Served) -> None:
    served.configmap("config")
    stream = io.StringIO()
    capture = Capture(
        served.api(), LogWriter(stream, started=system_clock(), source={}), all_resources=True, namespaces=["default"]
    )
    await capture.start()
    assert {event.resource.plural for event in recorded(stream) if event.type != "BOOKMARK"} == {"configmaps"}
    served.cluster.create(served.cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    await until(lambda: served.cluster.watched(("acme.example", "widgets")))
    served.cluster.create(served.cluster.resource("acme.example", "v1", "widgets"), "default", widget("w1"))
    await until(lambda: any(event.resource.plural == "widgets" for event in recorded(stream)))
    await capture.stop()
    await capture.api.close()
    # The CRDs are not namespaced, so not recorded as such; but the widgets' CRD comes before the first widget, once:
    # the log replays into a cluster without it.
    assert summary(recorded(stream))[-2:] == [("ADDED", "widgets.acme.example", False), ("ADDED", "w1", False)]
    assert sum(event.resource.plural == "customresourcedefinitions" for event in recorded(stream)) == 1


async def test_a_custom_resources_crd_comes_before_its_first_object(served: Served) -> None:
    """A log of widgets alone replayed only into a cluster that had their CRD ("unknown resource" elsewhere)."""
    served.cluster.create(served.cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    served.cluster.create(served.cluster.resource("acme.example", "v1", "widgets"), "default", widget("w1"))
    served.configmap("config")
    stream = io.StringIO()
    capture = Capture(served.api(), LogWriter(stream, started=system_clock(), source={}), resources=["widgets", "cm"])
    await capture.start()
    served.cluster.create(served.cluster.resource("acme.example", "v1", "widgets"), "default", widget("w2"))
    await until(lambda: any(event.object["metadata"].get("name") == "w2" for event in recorded(stream)))
    await capture.stop()
    await capture.api.close()
    log = parse_log(stream.getvalue())
    assert summary(list(log.events)) == [
        ("ADDED", "widgets.acme.example", False),  # once, before the first widget; configmaps have no CRD
        ("ADDED", "w1", False),
        ("ADDED", "config", False),
        ("ADDED", "w2", False),
    ]
    assert log.events[0].object["kind"] == "CustomResourceDefinition"

    target = Cluster()  # without the CRD: the log defines it
    replay = await prepare(log, app_api(build_app(target)), resources=["widgets", "customresourcedefinitions"])
    await replay.run(speed=None, quiet=0.05)
    assert [obj["metadata"]["name"] for obj in target.objects(("acme.example", "widgets"))] == ["w1", "w2"]


async def test_what_cannot_be_recorded_is_said_clearly(served: Served) -> None:
    writer = LogWriter(io.StringIO(), started=system_clock(), source={})
    with pytest.raises(CaptureError, match="Nothing to record: name the resources"):
        Capture(served.api(), writer)
    capture = Capture(served.api(), writer, resources=["gizmos"])
    with pytest.raises(CaptureError, match=r'The server has no resource type "gizmos"\.'):
        await capture.start()
    await capture.api.close()
    wrong = served.api(token="wrong")
    with pytest.raises(CaptureError, match=r"refused to be recorded: GET /apis: 401 Unauthorized: Unauthorized"):
        await Capture(wrong, writer, resources=["pods"]).start()
    await wrong.close()
    nowhere = HttpApi("http://127.0.0.1:9")
    with pytest.raises(CaptureError, match=r"Cannot reach the cluster at http://127.0.0.1:9: "):
        await Capture(nowhere, writer, resources=["pods"]).start()
    await nowhere.close()


# -- the command line ----------------------------------------------------------------------------------


async def test_kopf_sim_record_for_a_duration(served: Served, tmp_path: Path) -> None:
    served.configmap("first")
    log = tmp_path / "log.jsonl"
    process = await asyncio.create_subprocess_exec(
        str(KOPF_SIM),
        "record",
        "--kubeconfig",
        str(served.kubeconfig),
        "-r",
        "configmaps",
        "-n",
        "default",
        "-o",
        str(log),
        "--duration",
        "1",
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    announced = await asyncio.wait_for(process.stderr.readline(), 20)
    assert announced.decode().startswith(
        f"Recording {served.served.url} (context kopf-sim) into {log}: 1 object there now"
    )
    served.configmap("second")
    rest = (await asyncio.wait_for(process.stderr.read(), 20)).decode()
    assert await process.wait() == 0
    assert "\r" not in rest  # no progress line when not on a terminal
    assert re.match(r"Recorded \d+ events, 2 objects in 1 resource, ", rest)  # bookmarks every 0.2 s count too
    recorded_log = read_log(log)
    assert recorded_log.headers[0]["source"] == {
        "recorder": "kopf-sim record",
        "server": served.served.url,
        "context": "kopf-sim",
        "resources": ["configmaps"],
        "namespaces": ["default"],
    }
    assert [(e.type, e.object["metadata"]["name"]) for e in recorded_log.changes()] == [
        ("ADDED", "first"),
        ("ADDED", "second"),
    ]


async def test_a_progress_line_on_a_terminal(served: Served, tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        process = await asyncio.create_subprocess_exec(
            str(KOPF_SIM),
            "record",
            "--kubeconfig",
            str(served.kubeconfig),
            "-r",
            "configmaps",
            "-o",
            str(tmp_path / "log.jsonl"),
            "--duration",
            "1.2",
            stderr=terminal,
        )
        assert await process.wait() == 0
        output = b""
        while chunk := await asyncio.to_thread(_read_available, controller):
            output += chunk
    finally:
        os.close(terminal)
        os.close(controller)
    text = output.decode()
    assert re.search(r"\rRecording: \d+ events?, 0 objects in 1 resource, [\d.]+ events/s, 0:00:0\d\x1b\[K", text)
    assert text.rstrip().endswith("into " + str(tmp_path / "log.jsonl") + ".")


def _read_available(fd: int) -> bytes:
    ready, _, _ = select.select([fd], [], [], 0.2)
    return os.read(fd, 65536) if ready else b""


def test_command_line_mistakes(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["record", "-o", str(tmp_path / "x.jsonl"), "--kubeconfig", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert f"Error: Cannot use the kubeconfig {tmp_path / 'none'}:" in result.output
    (tmp_path / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
    )
    result = runner.invoke(
        main, ["record", "-o", str(tmp_path / "x.jsonl"), "--kubeconfig", str(tmp_path / "kubeconfig")]
    )
    assert result.exit_code == 1 and "Error: Nothing to record: name the resources" in result.output
    result = runner.invoke(
        main, ["record", "-r", "pods", "-o", str(tmp_path / "x.jsonl"), "--kubeconfig", str(tmp_path / "kubeconfig")]
    )
    assert result.exit_code == 1 and "Error: Cannot reach the cluster at http://127.0.0.1:9" in result.output
    result = runner.invoke(main, ["record", "-r", "pods"])
    assert result.exit_code == 2 and "Missing option '--output'" in result.output
