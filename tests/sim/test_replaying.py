"""Watch-event logs: the format as recorded, the checks of every line, and replays into a simulated cluster.

The replays run in virtual time (each async test in a fresh virtual-time loop): their timing is exact.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from kopf_sim.http.app import build_app
from kopf_sim.recording.apiclient import app_api
from kopf_sim.recording.eventlog import ChangeRecorder, LogWriter, redact
from kopf_sim.recording.replaying import (
    Bookkeeping,
    LogError,
    ReplayError,
    WatchLog,
    parse_log,
    prepare,
    read_log,
)
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.watching import Change
from kopf_sim.timing import virtualtime
from kopf_sim.timing.clock import ManualClock, SeededUids
from tests.helpers import widget

from .conftest import CRD

MERGE = "application/merge-patch+json"
HEADER = '{"format": "kopf-sim-watch-log", "version": 1, "started": "2026-01-01T00:00:00Z"}'


def in_virtual_time(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """A sync test that runs the async one in a fresh virtual-time loop (plain: pytest-asyncio leaves it alone)."""

    def run_in_virtual_time() -> None:
        virtualtime.run(test())

    run_in_virtual_time.__name__ = test.__name__
    return run_in_virtual_time


def record(steps: Callable[[Cluster, ManualClock], None], *, crd: bool = True) -> str:
    """The log of what ``steps`` do to a fresh cluster (with the Widget CRD, created before the recording)."""
    clock = ManualClock()
    cluster = Cluster(clock=clock, uids=SeededUids(7))
    if crd:
        cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
    stream = io.StringIO()
    cluster.observers.append(ChangeRecorder(stream, clock=clock, source={"recorder": "test"}))
    steps(cluster, clock)
    return stream.getvalue()


def widgets(cluster: Cluster) -> Any:
    return cluster.resource("acme.example", "v1", "widgets")


class Target:
    """A fresh cluster (with the CRD) to replay into, and the changes it gets, as a watcher would see them."""

    def __init__(self, *, crd: bool = True) -> None:
        self.cluster = Cluster(clock=virtualtime.loop_clock(None), uids=SeededUids(99))
        if crd:
            self.cluster.create(
                self.cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD
            )
        self.changes: list[tuple[float, Change]] = []
        self.cluster.observers.append(lambda change: self.changes.append((asyncio.get_running_loop().time(), change)))
        self.api = app_api(build_app(self.cluster))

    def seen(self, plural: str = "widgets") -> list[tuple[str, str, Any, Any]]:
        return [
            (change.type, change.obj["metadata"]["name"], change.obj.get("spec"), change.obj.get("status"))
            for _, change in self.changes
            if change.key[1] == plural
        ]


def flapping(cluster: Cluster, clock: ManualClock) -> None:
    clock.advance(1)
    cluster.create(widgets(cluster), "default", widget("w1", size=1))
    clock.advance(2)
    cluster.patch(widgets(cluster), "default", "w1", {"spec": {"size": 2}}, MERGE)
    clock.advance(3)
    cluster.patch(widgets(cluster), "default", "w1", {"status": {"phase": "Ready"}}, MERGE, subresource="status")
    clock.advance(4)
    cluster.delete(widgets(cluster), "default", "w1")


# -- the format ------------------------------------------------------------------------------------


def test_the_recorded_format() -> None:
    header, *events = [json.loads(line) for line in record(flapping).splitlines()]
    assert header == {
        "format": "kopf-sim-watch-log",
        "version": 1,
        "started": "2026-01-01T00:00:00.000000Z",
        "source": {"recorder": "test"},
        "secrets": "redacted",
    }
    assert [(e["t"], e["type"], e["resource"]) for e in events] == [
        (t, kind, {"group": "acme.example", "version": "v1", "plural": "widgets"})
        for t, kind in [(1.0, "ADDED"), (3.0, "MODIFIED"), (6.0, "MODIFIED"), (10.0, "DELETED")]
    ]
    assert events[1]["object"]["spec"] == {"size": 2, "color": "blue"}  # as stored: defaulted by the schema


def test_secrets_are_redacted_unless_asked_for() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "data": {"token": "c2VjcmV0"},
        "stringData": {"pw": "x"},
        "metadata": {
            "name": "s",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{…}", "other": "kept"},
        },
    }
    redacted = redact("", "secrets", secret)
    assert redacted["data"] == {"token": ""} and redacted["stringData"] == {"pw": ""}
    assert redacted["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": "",
        "other": "kept",
    }
    assert secret["data"] == {"token": "c2VjcmV0"}  # the original is untouched
    assert redact("", "configmaps", {"data": {"a": "b"}}) == {"data": {"a": "b"}}

    stream = io.StringIO()
    writer = LogWriter(stream, started=ManualClock()(), source={}, secrets=True)
    writer.write(0.5, "", "v1", "secrets", "ADDED", secret)
    header, event = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert header["secrets"] == "included" and event["object"]["data"] == {"token": "c2VjcmV0"}


def test_appended_segments_count_from_their_own_start(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(
        "\n".join(
            [
                HEADER,
                '{"t": 5, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "ADDED",'
                ' "object": {"metadata": {"name": "a"}}}',
                '{"format": "kopf-sim-watch-log", "version": 1, "started": "2026-01-01T00:01:00Z"}',
                '{"t": 2.5, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "DELETED",'
                ' "object": {"metadata": {"name": "a"}}}',
                "",
            ]
        )
    )
    log = read_log(path)
    assert [(event.line, event.t, event.type) for event in log.events] == [(2, 5.0, "ADDED"), (4, 62.5, "DELETED")]
    assert parse_log(log.dumps()).events[1].t == 62.5  # written back, read again: the same times


# -- the checks of every line ------------------------------------------------------------------------


def problems(text: str) -> list[str]:
    with pytest.raises(LogError) as info:
        parse_log(text, source="incident.jsonl")
    assert "nothing was written" in str(info.value)
    return [str(problem) for problem in info.value.problems]


def test_every_bad_line_is_named() -> None:
    good = (
        '{"t": 0, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "ADDED", '
        '"object": {"metadata": {"name": "a"}}}'
    )
    text = "\n".join(
        [
            HEADER,
            good,
            "{not json",
            "[1, 2]",
            '{"t": 1, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "ADDED"}',
            '{"t": 1, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "ADDED", '
            '"object": {"metadata": {}}}',
            '{"t": -1, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "ADDED", '
            '"object": {}}',
            '{"t": 1, "resource": "configmaps", "type": "ADDED", "object": {}}',
            '{"t": 1, "resource": {"group": "", "version": "v1", "plural": "configmaps"}, "type": "CHANGED", '
            '"object": {}}',
            good,
        ]
    )
    assert problems(text) == [
        "incident.jsonl:3: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        "incident.jsonl:4: expected a JSON object, got list",
        "incident.jsonl:5: the event has no object",
        "incident.jsonl:6: the event's object has no metadata.name",
        "incident.jsonl:7: the event's time 't' is -1: negative (it is the seconds since the log's start)",
        'incident.jsonl:8: the event has no resource: \'resource\' must be {"group": …, "version": …, "plural": …}',
        "incident.jsonl:9: unknown event type 'CHANGED' (expected one of ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)",
    ]


def configmap_at(t: str, name: str = "a", kind: str = "ADDED") -> str:
    return (
        f'{{"t": {t}, "resource": {{"group": "", "version": "v1", "plural": "configmaps"}}, "type": "{kind}", '
        f'"object": {{"metadata": {{"name": "{name}"}}}}}}'
    )


def test_times_are_finite_not_negative_and_bounded() -> None:
    """A NaN replayed at speed 1.0 took no time at all, and 1e308 printed a 300-digit duration: both are refused."""
    text = "\n".join(
        [
            HEADER,
            configmap_at("NaN"),
            configmap_at("Infinity"),
            configmap_at("-0.5"),
            configmap_at("1e308"),
            configmap_at("1" * 400),  # a JSON int of 400 digits: no float holds it
        ]
    )
    assert problems(text) == [
        "incident.jsonl:2: the event's time 't' is NaN: not a finite number of seconds since the log's start",
        "incident.jsonl:3: the event's time 't' is Infinity: not a finite number of seconds since the log's start",
        "incident.jsonl:4: the event's time 't' is -0.5: negative (it is the seconds since the log's start)",
        "incident.jsonl:5: the event's time 't' is 1e+308 s: more than 1000000000 s (about 31 years) "
        "after the log's start",
        "incident.jsonl:6: the event's time 't' is 11111111…(400 characters) s: more than 1000000000 s "
        "(about 31 years) after the log's start",
    ]
    assert [event.t for event in parse_log("\n".join([HEADER, configmap_at("1e9")])).events] == [1e9]  # the bound


def test_the_time_never_goes_back_within_a_segment() -> None:
    """A reversed log replayed its deletion as the first change: the first line going back is named, once."""
    reversed_log = "\n".join(
        [
            HEADER,
            configmap_at("1"),
            configmap_at("1", kind="MODIFIED"),
            configmap_at("9", kind="DELETED"),
            configmap_at("5", kind="MODIFIED"),
            configmap_at("3", kind="MODIFIED"),
            configmap_at("0.5", name="b"),
        ]
    )
    assert problems(reversed_log) == [
        "incident.jsonl:5: the time goes back: 't' is 5, before the 9 of line 4 "
        "(the events are in the order they happened: 't' never decreases)"
    ]


def test_a_segment_counts_from_its_own_start_but_never_before_the_events_above_it() -> None:
    """Its recorder's clock may have been behind: the order of the lines is the order of the events."""
    earlier = '{"format": "kopf-sim-watch-log", "version": 1, "started": "2025-12-31T23:59:00Z"}'
    later = '{"format": "kopf-sim-watch-log", "version": 1, "started": "2026-01-01T00:01:00Z"}'
    undated = '{"format": "kopf-sim-watch-log", "version": 1}'
    text = "\n".join(
        [
            *[HEADER, configmap_at("5"), earlier, configmap_at("0", "b"), configmap_at("2", "c")],
            *[later, configmap_at("1", "d"), undated, configmap_at("0", "e")],
        ]
    )
    assert [(event.line, event.t) for event in parse_log(text).events] == [(2, 5), (4, 5), (5, 7), (7, 61), (9, 61)]
    far = '{"format": "kopf-sim-watch-log", "version": 1, "started": "9999-01-01T00:00:00Z"}'
    assert problems("\n".join([HEADER, far, configmap_at("0")])) == [
        "incident.jsonl:2: the header's start time '9999-01-01T00:00:00Z' is 251603539200 s after the first "
        "header's: more than 1000000000 s (about 31 years)"
    ]


def test_a_recorder_never_writes_a_time_going_back() -> None:
    """A wall clock set back while a cluster is served and recorded holds the times: the log stays readable."""
    stream = io.StringIO()
    writer = LogWriter(stream, started=ManualClock()(), source={})
    for t in (1.0, 3.0, 2.0, 4.0):
        writer.write(t, "", "v1", "configmaps", "MODIFIED", {"metadata": {"name": "a"}})
    assert [event.t for event in parse_log(stream.getvalue()).events] == [1.0, 3.0, 3.0, 4.0]


def test_headers_are_checked() -> None:
    assert problems('{"format": "kopf-sim-watch-log", "version": 2}') == [
        "incident.jsonl:1: unknown log version 2 (this kopf-sim reads version 1)"
    ]
    assert problems('{"format": "something-else", "version": 1}') == [
        "incident.jsonl:1: not a watch-event log of kopf-sim: the format is 'something-else', not 'kopf-sim-watch-log'"
    ]
    old_style = '{"type": "ADDED", "object": {"metadata": {"name": "a"}}}'
    assert problems(old_style)[0].startswith("incident.jsonl:1: no header: a log starts with a line like")
    assert problems("") == ["incident.jsonl: the log is empty (not even a header)"]


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(LogError, match=r"absent.jsonl: cannot read the log: No such file or directory"):
        read_log(tmp_path / "absent.jsonl")


@in_virtual_time
async def test_unknown_resources_are_named_and_nothing_is_written() -> None:
    log = parse_log(record(flapping), source="incident.jsonl")
    target = Target(crd=False)
    before = target.cluster.rv
    with pytest.raises(LogError) as info:
        await prepare(log, target.api)
    assert [str(p) for p in info.value.problems] == [
        f"incident.jsonl:{line}: unknown resource widgets.acme.example (version v1): the cluster does not serve it "
        f"(create its CRD before the replay, or replay only other resources)"
        for line in (2, 3, 4, 5)
    ]
    assert target.cluster.rv == before


@in_virtual_time
async def test_a_crd_earlier_in_the_log_defines_its_resource() -> None:
    def with_crd(cluster: Cluster, clock: ManualClock) -> None:
        cluster.create(cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, CRD)
        flapping(cluster, clock)

    target = Target(crd=False)
    replay = await prepare(parse_log(record(with_crd, crd=False)), target.api)
    await replay.run(speed=None)
    assert [kind for kind, *_ in target.seen()] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]


# -- replaying -------------------------------------------------------------------------------------


@in_virtual_time
async def test_the_changes_are_replayed_at_their_relative_times() -> None:
    target = Target()
    replay = await prepare(parse_log(record(flapping)), target.api)
    assert [(step.where, step.action) for step in replay.steps] == [
        ("<log>:2", "create"),
        ("<log>:3", "update"),
        ("<log>:4", "update"),
        ("<log>:5", "delete"),
    ]
    start = asyncio.get_running_loop().time()
    await replay.run()
    assert [(t - start, kind) for t, (kind, *_) in zip([t for t, c in target.changes], target.seen(), strict=True)] == [
        (0.0, "ADDED"),
        (2.0, "MODIFIED"),
        (5.0, "MODIFIED"),
        (9.0, "DELETED"),
    ]
    assert target.seen() == [
        ("ADDED", "w1", {"size": 1, "color": "blue"}, None),
        ("MODIFIED", "w1", {"size": 2, "color": "blue"}, None),
        ("MODIFIED", "w1", {"size": 2, "color": "blue"}, {"phase": "Ready"}),
        ("DELETED", "w1", {"size": 2, "color": "blue"}, {"phase": "Ready"}),
    ]


@in_virtual_time
async def test_the_speed_divides_the_times() -> None:
    target = Target()
    replay = await prepare(parse_log(record(flapping)), target.api)
    start = asyncio.get_running_loop().time()
    await replay.run(speed=4.0)
    assert [t - start for t, _ in target.changes] == [0.0, 0.5, 1.25, 2.25]
    with pytest.raises(ValueError, match="The speed must be a positive number or None, got 0"):
        await replay.run(speed=0)


@in_virtual_time
async def test_as_fast_as_the_cluster_quiesces() -> None:
    target = Target()

    def echo(change: Change) -> None:  # a "controller": each change of a widget makes a change of a configmap
        if change.key[1] == "widgets" and change.type != "DELETED":
            loop = asyncio.get_running_loop()
            loop.call_later(
                0.5,
                target.cluster.create,
                target.cluster.resource("", "v1", "configmaps"),
                "default",
                {"metadata": {"name": f"echo-{change.rv}"}},
            )

    target.cluster.observers.append(echo)
    replay = await prepare(parse_log(record(flapping)), target.api)
    start = asyncio.get_running_loop().time()
    await replay.run(speed=None, quiet=1.0)
    times = [(round(t - start, 3), change.key[1]) for t, change in target.changes]
    # Each widget change, its echo 0.5 s later, then 1 s of quiet before the next change (and after the last).
    assert times == [
        (0.0, "widgets"),
        (0.5, "configmaps"),
        (1.5, "widgets"),
        (2.0, "configmaps"),
        (3.0, "widgets"),
        (3.5, "configmaps"),
        (4.5, "widgets"),
    ]
    assert asyncio.get_running_loop().time() - start == 5.5


@in_virtual_time
async def test_step_by_step() -> None:
    target = Target()
    replay = await prepare(parse_log(record(flapping)), target.api)
    first, second, *rest = replay
    await replay.apply(first)
    assert target.seen() == [("ADDED", "w1", {"size": 1, "color": "blue"}, None)]
    target.cluster.patch(widgets(target.cluster), "default", "w1", {"metadata": {"labels": {"mine": "yes"}}}, MERGE)
    await replay.apply(second)
    assert list(replay) == rest
    obj = target.cluster.get(widgets(target.cluster), "default", "w1")
    assert obj["spec"]["size"] == 2 and obj["metadata"]["labels"] == {"mine": "yes"}  # the change, not the state
    await replay.run(speed=None)
    assert target.seen()[-1][0] == "DELETED"


@in_virtual_time
async def test_the_operators_bookkeeping_is_left_to_the_operator_under_test() -> None:
    def kopf_like(cluster: Cluster, clock: ManualClock) -> None:
        cluster.create(widgets(cluster), "default", widget("w1", size=1))
        clock.advance(1)
        cluster.patch(
            widgets(cluster),
            "default",
            "w1",
            {
                "metadata": {
                    "finalizers": ["kopf.zalando.org/KopfFinalizerMarker", "acme.example/protect"],
                    "annotations": {"kopf.zalando.org/last-handled-configuration": "{}", "team": "a"},
                }
            },
            MERGE,
        )
        cluster.patch(
            widgets(cluster), "default", "w1", {"status": {"kopf": {"progress": {}}}}, MERGE, subresource="status"
        )
        clock.advance(1)
        cluster.delete(widgets(cluster), "default", "w1")
        clock.advance(1)
        cluster.patch(
            widgets(cluster), "default", "w1", {"metadata": {"finalizers": ["acme.example/protect"]}}, MERGE
        )  # the recorded operator let it go; another finalizer holds it
        clock.advance(1)
        cluster.patch(widgets(cluster), "default", "w1", {"metadata": {"finalizers": None}}, MERGE)

    target = Target()
    replay = await prepare(parse_log(record(kopf_like)), target.api)
    assert [(step.action, step.event.line) for step in replay.steps] == [
        ("create", 2),
        ("update", 3),
        ("delete", 5),
        ("delete", 7),
    ]
    assert [(event.line, why) for event, why in replay.skipped] == [
        (4, "no change but in the server's and the operator's own fields"),
        (6, "no change but in the server's and the operator's own fields"),
    ]
    await replay.apply(replay.steps[0])
    await replay.apply(replay.steps[1])
    obj = target.cluster.get(widgets(target.cluster), "default", "w1")
    assert obj["metadata"]["finalizers"] == ["acme.example/protect"]
    assert obj["metadata"]["annotations"] == {"team": "a"}
    await replay.run(speed=None)
    assert [kind for kind, *_ in target.seen()] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]

    everything = await prepare(parse_log(record(kopf_like)), Target().api, bookkeeping=Bookkeeping())
    assert len(everything.steps) == 6


@in_virtual_time
async def test_owner_references_follow_the_new_uids() -> None:
    def owned(cluster: Cluster, clock: ManualClock) -> None:
        owner = cluster.create(widgets(cluster), "default", widget("w1"))
        ref = {"apiVersion": "acme.example/v1", "kind": "Widget", "name": "w1", "uid": owner["metadata"]["uid"]}
        stranger = {**ref, "name": "w0", "uid": "00000000-0000-4000-8000-000000000000"}
        cluster.create(
            cluster.resource("", "v1", "configmaps"),
            "default",
            {"metadata": {"name": "child", "ownerReferences": [ref, stranger]}},
        )

    target = Target()
    replay = await prepare(parse_log(record(owned)), target.api)
    await replay.run(speed=None)
    owner = target.cluster.get(widgets(target.cluster), "default", "w1")
    child = target.cluster.get(target.cluster.resource("", "v1", "configmaps"), "default", "child")
    assert [ref["uid"] for ref in child["metadata"]["ownerReferences"]] == [owner["metadata"]["uid"]]
    assert replay.uids == {
        replay.steps[0].view.uid: owner["metadata"]["uid"],
        replay.steps[1].view.uid: child["metadata"]["uid"],
    }
    target.cluster.delete(widgets(target.cluster), "default", "w1")  # the garbage collector follows the new owner
    assert target.cluster.count(("", "configmaps")) == 0


@in_virtual_time
async def test_a_recreation_waits_until_the_old_object_is_gone() -> None:
    def recreated(cluster: Cluster, clock: ManualClock) -> None:
        cluster.create(widgets(cluster), "default", widget("w1", size=1))
        clock.advance(1)
        cluster.delete(widgets(cluster), "default", "w1")
        clock.advance(1)
        cluster.create(widgets(cluster), "default", widget("w1", size=2))

    target = Target()
    replay = await prepare(parse_log(record(recreated)), target.api)
    first, deletion, recreation = replay.steps
    await replay.apply(first)
    rtype = widgets(target.cluster)
    target.cluster.patch(rtype, "default", "w1", {"metadata": {"finalizers": ["test/slow"]}}, MERGE)
    await replay.apply(deletion)
    loop = asyncio.get_running_loop()
    loop.call_later(30, target.cluster.patch, rtype, "default", "w1", {"metadata": {"finalizers": None}}, MERGE)
    start = loop.time()
    await replay.apply(recreation)
    assert loop.time() - start == pytest.approx(30, abs=0.2)
    assert target.cluster.get(rtype, "default", "w1")["spec"]["size"] == 2

    target = Target()
    replay = await prepare(parse_log(record(recreated)), target.api)
    await replay.apply(replay.steps[0])
    target.cluster.patch(widgets(target.cluster), "default", "w1", {"metadata": {"finalizers": ["test/stuck"]}}, MERGE)
    with pytest.raises(ReplayError) as info:
        await replay.run(speed=None)
    assert str(info.value) == (
        "The replay stopped at <log>:4 (create widgets.acme.example default/w1), change 3 of 3: POST "
        "/apis/acme.example/v1/namespaces/default/widgets: 409 AlreadyExists: the previous 'w1' is still being "
        "deleted after 60.0 s (finalizers: ['test/stuck']). Of the log's changes, the 2 before it were written; "
        "none after it."
    )
    assert replay.position == 2


@in_virtual_time
async def test_a_refused_write_says_how_far_the_replay_got() -> None:
    def two(cluster: Cluster, clock: ManualClock) -> None:
        cluster.create(widgets(cluster), "default", widget("w1", size=1))
        cluster.create(widgets(cluster), "default", widget("w2", size=1))

    log = parse_log(record(two))
    events = list(log.events)
    events[1] = type(events[1])(**{**events[1].__dict__, "object": {**events[1].object, "spec": {"size": -1}}})
    target = Target()
    replay = await prepare(log.with_events(events), target.api)
    with pytest.raises(
        ReplayError,
        match=r"The replay stopped at <log>:3 \(create widgets.acme.example default/w2\)"
        r", change 2 of 2: POST .*: 422 Invalid: .*spec.size.*Of the log's "
        r"changes, the 1 before it were written; none after it.",
    ):
        await replay.run(speed=None)


@in_virtual_time
async def test_namespaces_are_made_or_mapped() -> None:
    def elsewhere(cluster: Cluster, clock: ManualClock) -> None:
        cluster.create(cluster.resource("", "v1", "namespaces"), None, {"metadata": {"name": "team-a"}})
        cluster.create(widgets(cluster), "team-a", widget("w1", namespace="team-a"))
        cluster.create(widgets(cluster), "team-b", widget("w2", namespace="team-b")) if False else None

    text = record(elsewhere)
    target = Target()
    replay = await prepare(parse_log(text), target.api, resources=["widgets"])  # the namespace is not replayed
    await replay.run(speed=None)
    assert target.cluster.get(widgets(target.cluster), "team-a", "w1")  # its namespace was made for it

    target = Target()
    replay = await prepare(parse_log(text), target.api, namespace="mine")
    assert [(event.line, why) for event, why in replay.skipped] == [
        (2, "namespaces are not replayed into the namespace 'mine'")
    ]
    await replay.run(speed=None)
    assert target.cluster.get(widgets(target.cluster), "mine", "w1")


@in_virtual_time
async def test_until_and_resources_select_events() -> None:
    log = parse_log(record(flapping))
    assert len((await prepare(log, Target().api, until=3.0)).steps) == 2
    assert len((await prepare(log, Target().api, resources=["Widget"])).steps) == 4
    with pytest.raises(
        LogError,
        match=r"<log>: no events of 'pods' in the log \(its resources: "
        r"widgets.acme.example\)",
    ):
        await prepare(log, Target().api, resources=["pods"])


def test_a_log_written_back_reads_the_same(tmp_path: Path) -> None:
    log = parse_log(record(flapping))
    path = tmp_path / "again.jsonl"
    path.write_text(log.dumps())
    again = read_log(path)
    assert [(e.t, e.type, e.object) for e in again.events] == [(e.t, e.type, e.object) for e in log.events]
    assert isinstance(again, WatchLog)
