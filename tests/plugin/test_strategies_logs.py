"""``pytest_kopf.strategies``: recorded logs mutated as flaky watches would tell them, each still replayable."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings

from kopf_sim.http.app import build_app
from kopf_sim.manifests import read_manifest
from kopf_sim.recording.apiclient import app_api
from kopf_sim.recording.eventlog import ChangeRecorder
from kopf_sim.recording.replaying import WatchLog, parse_log, prepare
from kopf_sim.store.cluster import Cluster
from kopf_sim.timing import virtualtime
from kopf_sim.timing.clock import ManualClock, SeededUids
from pytest_kopf.strategies import coalesce_event, delay_event, drop_event, duplicate_event, mutated_logs

CRD = Path(__file__).resolve().parents[2] / "examples" / "crd.yaml"
MERGE = "application/merge-patch+json"


def fresh_cluster() -> Cluster:
    cluster = Cluster(clock=ManualClock(), uids=SeededUids(5))
    cluster.apply_manifests(read_manifest(CRD))
    return cluster


def example(name: str, field: str) -> dict[str, object]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": {"field": field}}


def incident() -> WatchLog:
    """Two objects changing in turns; one is deleted and made again."""
    cluster = fresh_cluster()
    clock = cluster.clock
    assert isinstance(clock, ManualClock)
    stream = io.StringIO()
    cluster.observers.append(ChangeRecorder(stream, clock=clock))
    examples = cluster.resource("kopf.dev", "v1", "kopfexamples")
    cluster.create(examples, "default", example("a", "1"))
    clock.advance(1)
    cluster.create(examples, "default", example("b", "1"))
    for field in "234":
        clock.advance(1)
        cluster.patch(examples, "default", "a", {"spec": {"field": field}}, MERGE)
        cluster.patch(examples, "default", "b", {"spec": {"field": field}}, MERGE)
    clock.advance(1)
    cluster.delete(examples, "default", "a")
    clock.advance(1)
    cluster.create(examples, "default", example("a", "5"))
    return parse_log(stream.getvalue(), source="incident.jsonl")


LOG = incident()


def story(log: WatchLog) -> list[tuple[float, str, str, str]]:
    return [
        (event.t, event.type, event.object["metadata"]["name"], event.object["spec"]["field"]) for event in log.events
    ]


def test_each_mutation() -> None:
    assert story(LOG)[:4] == [
        (0.0, "ADDED", "a", "1"),
        (1.0, "ADDED", "b", "1"),
        (2.0, "MODIFIED", "a", "2"),
        (2.0, "MODIFIED", "b", "2"),
    ]
    assert story(drop_event(LOG, 0))[0] == (1.0, "ADDED", "b", "1")
    assert story(duplicate_event(LOG, 1))[1:3] == [(1.0, "ADDED", "b", "1")] * 2
    delayed = story(delay_event(LOG, 2, 30.0))  # a's MODIFIED at 2.0: not after a's next event (at 3.0)
    assert delayed[2:5] == [(2.0, "MODIFIED", "b", "2"), (3.0, "MODIFIED", "a", "2"), (3.0, "MODIFIED", "a", "3")]
    assert story(coalesce_event(LOG, 0))[:2] == [(1.0, "ADDED", "b", "1"), (2.0, "ADDED", "a", "2")]
    gone_and_back = coalesce_event(LOG, 8)  # a's DELETED and its new ADDED: seen as one change of a
    assert story(gone_and_back)[-1] == (6.0, "MODIFIED", "a", "5")
    assert coalesce_event(LOG, len(LOG.events) - 1) == LOG  # nothing after it to merge into


def resource_versions_in_order(log: WatchLog) -> bool:
    last: dict[tuple[str, str, str, str], int] = {}
    for event in log.events:
        version = int(event.object["metadata"]["resourceVersion"])
        if version < last.get(event.identity, 0):
            return False
        last[event.identity] = version
    return True


@settings(max_examples=60)
@given(mutated_logs(LOG, max_mutations=5))
def test_no_object_sees_its_events_out_of_order(variant: WatchLog) -> None:
    assert resource_versions_in_order(variant)
    assert [event.t for event in variant.events] == sorted(event.t for event in variant.events)


@settings(max_examples=20)
@given(mutated_logs(LOG, max_mutations=4))
def test_every_variant_replays_to_the_state_it_ends_with(variant: WatchLog) -> None:
    async def replay() -> dict[str, str]:
        cluster = fresh_cluster()
        replayed = await prepare(variant, app_api(build_app(cluster)))
        await replayed.run(speed=None, quiet=0.1)
        return {obj["metadata"]["name"]: obj["spec"]["field"] for obj in cluster.objects(("kopf.dev", "kopfexamples"))}

    expected: dict[str, str] = {}
    for event in variant.changes():
        name = event.object["metadata"]["name"]
        if event.type == "DELETED":
            expected.pop(name, None)
        else:
            expected[name] = event.object["spec"]["field"]
    assert virtualtime.run(replay()) == expected
