"""Noise, learned instead of reported: seeded randomness per world, fields that differ between two correct runs,
timestamps refreshed while settling, what kopf has scheduled, and sync handlers still running at a graceful stop."""

from __future__ import annotations

import base64
import contextlib
import datetime
import os
import random
import secrets
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kopf
from kopf_sim.timing.virtualtime import DEFAULT_EPOCH
from pytest_kopf._history import handler_ids, history_masked
from pytest_kopf._noise import (
    MASKED,
    NoiseField,
    described,
    difference,
    format_path,
    is_timestamp,
    learn,
    normalized,
    only_timestamps_changed,
)
from pytest_kopf.checks import check_operator
from pytest_kopf.driving import caught_up, end_state
from pytest_kopf.errors import OperatorCheckFailed
from pytest_kopf.stateful import REFERENCE_SEED, OperatorSpec, World

from .test_gallery import INNER_PYTEST

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def secret(name: str, **data: str) -> dict[str, Any]:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}, "data": encoded}


def status(name: str, **fields: Any) -> dict[str, Any]:
    return {**gadget(name), "metadata": {"name": name, "namespace": "default"}, "status": fields}


# -- learning & masking --------------------------------------------------------------------------------


def test_secrets_are_compared_by_their_decoded_data() -> None:
    assert normalized(secret("s", password="hunter2"))["data"] == {"password": "hunter2"}
    binary = {**secret("s"), "data": {"key": base64.b64encode(b"\xff\xfe").decode()}}
    assert normalized(binary)["data"] == {"key": "base64://4="}


def test_the_fields_that_differ_between_two_correct_runs_are_learned_by_object_and_path() -> None:
    first = [
        secret("obj-0-credentials", username="obj-0", password="first"),
        status(
            "obj-0",
            instanceId="a",
            size=1,
            conditions=[
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
                {"type": "Synced", "status": "True"},
            ],
        ),
    ]
    second = [
        secret("obj-0-credentials", username="obj-0", password="second"),
        status(
            "obj-0",
            instanceId="b",
            size=1,
            extra="only here",
            conditions=[
                {"type": "Synced", "status": "True"},  # another order: matched by type
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T01:01:06Z"},
            ],
        ),
        secret("random-name", a="b"),
    ]
    noise = learn(first, second)
    assert sorted(map(str, noise)) == [
        "Gadget obj-0 status.conditions[type=Ready].lastTransitionTime",
        "Gadget obj-0 status.extra",
        "Gadget obj-0 status.instanceId",
        "Secret obj-0-credentials data.password",
        "Secret random-name (the object itself)",
    ]
    assert NoiseField("v1", "Secret", "default", "obj-0-credentials", ("data", "password")) in noise

    # A third run with another password, another id, a later transition: the same, noise aside.
    third = [
        secret("obj-0-credentials", username="obj-0", password="third"),
        status("obj-0", instanceId="c", size=1, conditions=list(reversed(second[1]["status"]["conditions"]))),
    ]
    assert difference(first, third, noise) is None
    # But a real difference is shown, with the noise masked.
    fourth = [third[0], status("obj-0", instanceId="d", size=2, conditions=third[1]["status"]["conditions"])]
    shown = difference(first, fourth, noise)
    assert shown is not None
    assert "-    size: 1" in shown and "+    size: 2" in shown
    assert f"instanceId: {MASKED}" in shown and "instanceId: a" not in shown


def test_a_noisy_value_still_counts_by_its_presence() -> None:
    noise = learn([status("obj-0", token="a")], [status("obj-0", token="b")])
    assert difference([status("obj-0", token="a")], [status("obj-0")], noise) is not None


def test_a_child_named_with_a_random_draw_is_one_object_whatever_its_name() -> None:
    """A correct operator names a child after a random id (recorded first, made once): the two references, and a
    faulted run that drew once more, each have one child with another name; a second child is still a difference."""

    def job(name: str) -> dict[str, Any]:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"}}

    def run(*names: str) -> list[dict[str, Any]]:
        return [*(job(name) for name in names), status("obj-0", setupJob=names[0])]

    noise = learn(run("obj-0-setup-9c0a05de"), run("obj-0-setup-57b9d0ab"))
    assert described(noise) == "Gadget obj-0 status.setupJob, Job obj-0-setup-<noise> metadata.name"
    assert difference(run("obj-0-setup-9c0a05de"), run("obj-0-setup-1234abcd"), noise) is None
    assert difference(run("obj-0-setup-9c0a05de"), run("obj-0-setup-1234abcd", "obj-0-setup-99999999"), noise)
    assert learn(run("obj-0-a"), run("obj-0-b")) == {  # not a drawn part: two objects, each in one run only
        NoiseField("batch/v1", "Job", "default", name, (), presence=True) for name in ("obj-0-a", "obj-0-b")
    } | {NoiseField("checks.example/v1", "Gadget", "default", "obj-0", ("status", "setupJob"))}


def test_paths_read_as_the_fields_they_name() -> None:
    assert format_path(("status", "conditions", ("type", "Ready"), "lastTransitionTime")) == (
        "status.conditions[type=Ready].lastTransitionTime"
    )
    assert format_path(("metadata", "annotations", "example.com/stamp")) == 'metadata.annotations["example.com/stamp"]'
    assert format_path(("spec", "clusterIPs", 0)) == "spec.clusterIPs[0]"


def test_timestamps_are_told_from_other_values() -> None:
    for moment in ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456+00:00", "2026-01-01 00:00:00", 1767225600.5):
        assert is_timestamp(moment), moment
    for other in ("2026-01-01", "ready", 5, 1.5, True, None, "12:00"):
        assert not is_timestamp(other), other


def test_a_change_that_only_moves_timestamps_is_told_from_one_that_grows_or_flips() -> None:
    old = status("obj-0", size=1, lastReconciled="2026-01-01T00:01:00Z")
    old["metadata"]["resourceVersion"] = "5"
    refreshed = status("obj-0", size=1, lastReconciled="2026-01-01T00:02:00Z")
    refreshed["metadata"]["resourceVersion"] = "6"
    assert only_timestamps_changed(old, refreshed)
    assert not only_timestamps_changed(old, status("obj-0", size=2, lastReconciled="2026-01-01T00:02:00Z"))
    assert not only_timestamps_changed(old, status("obj-0", size=1, lastReconciled="never"))
    assert not only_timestamps_changed(old, status("obj-0", size=1, lastReconciled="2026-01-01T00:01:00Z", n=1))
    assert not only_timestamps_changed(old, old)  # no change at all is not a refresh


# -- seeded randomness per world -----------------------------------------------------------------------

draws: list[tuple[Any, ...]] = []


def drawing_registry() -> kopf.OperatorRegistry:
    """Handlers that draw from every source of randomness: in the loop (async) and in threads (sync)."""
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    async def in_the_loop(name: str, **_: Any) -> None:
        draws.append(
            (
                name,
                secrets.token_urlsafe(8),
                str(uuid.uuid4()),
                str(uuid.uuid1()),
                random.random(),
                random.Random().random(),
                random.SystemRandom().random(),
            )
        )

    @kopf.on.create("gadgets", registry=registry, id="threaded")
    def in_a_thread(name: str, **_: Any) -> None:
        draws.append((name, secrets.token_hex(4), os.urandom(4), random.randint(0, 10**9), str(uuid.uuid4())))

    return registry


def draws_of(seed: int, registry: Callable[[], kopf.OperatorRegistry] = drawing_registry) -> list[tuple[Any, ...]]:
    draws.clear()
    world = World(OperatorSpec(manifests=(CRD,), registry=registry), seed=seed)
    try:
        for name in ("obj-0", "obj-1"):
            world.run(world.cluster.create(gadget(name)))
        world.run(world.settle())
    finally:
        world.close()
    return sorted(draws, key=repr)


def test_a_worlds_randomness_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    first, again, other = draws_of(0), draws_of(0), draws_of(1)
    assert len(first) == 4
    assert first == again
    assert not set(first) & set(other)
    assert len({value for row in first for value in row[1:]}) == len([value for row in first for value in row[1:]])


def test_a_resource_version_copied_by_the_operator_is_learned_as_noise() -> None:
    # outsider8's storm_ok keeps its ConfigMap's resourceVersion in status.limitsVersion: correct, but two
    # clusters number their revisions alike, so it failed 'transition' (the objects made in another order).
    states = []
    for seed in (0, 1):
        world = World(OperatorSpec(manifests=(CRD,), registry=kopf.OperatorRegistry), seed=seed)
        try:
            made = world.run(world.cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
            version = made["metadata"]["resourceVersion"]
            world.run(world.cluster.create({**gadget("obj-0"), "status": {"observed": version}}))
            world.run(world.cluster.patch(RESOURCE, "obj-0", {"status": {"observed": version}}, subresource="status"))
            states.append(end_state(world.cluster))
        finally:
            world.close()
    assert [str(field) for field in learn(*states)] == ["Gadget obj-0 status.observed"]


def choosing_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    async def in_the_loop(name: str, **_: Any) -> None:
        draws.append(("loop", name, *(random.choice("ab") for _ in range(5)), random.randint(1, 2)))
        # The system's generator (secrets: passwords from an alphabet, a pick among a few) is the world's too.
        draws.append(("secrets", name, *(secrets.choice("ab") for _ in range(5)), secrets.randbelow(2)))
        draws.append(("system", name, random.SystemRandom().choice("ab"), *random.SystemRandom().sample("ab", 2)))

    @kopf.on.create("gadgets", registry=registry, id="threaded")
    def in_a_thread(name: str, **_: Any) -> None:
        draws.append(("thread", name, *random.sample("ab", 2), random.choices("ab")[0], random.random() < 0.5))

    return registry


def test_the_reference_draws_unlike_the_baseline_every_time_even_a_choice_of_two() -> None:
    # outsider8's zone_ok (random.choice of three zones, once per object) failed 'retries': a retry drew once more,
    # so the next object drew another zone than in the baseline, where the reference had drawn the same by chance.
    baseline = {row[:2]: row[2:] for row in draws_of(0, choosing_registry)}
    reference = {row[:2]: row[2:] for row in draws_of(REFERENCE_SEED, choosing_registry)}
    assert len(baseline) == 8 and baseline.keys() == reference.keys()
    for where, ours in baseline.items():
        assert all(a != b for a, b in zip(ours, reference[where], strict=True)), where


def test_outside_of_the_worlds_the_randomness_is_the_processs_own() -> None:
    draws_of(0)
    assert os.urandom(16) != os.urandom(16)
    assert uuid.uuid4() != uuid.uuid4()
    assert random.random.__self__ is random._inst  # type: ignore[attr-defined]  # the original is back
    with tempfile.TemporaryDirectory() as path:  # its names come from a generator of the process, not a world's
        assert os.path.isdir(path)


def password_in_a_world(seed: int, epoch_offset: float) -> tuple[str, str]:
    """The password that random_credentials_ok.py draws for obj-0, and the Secret's creation time, in a world."""
    epoch = DEFAULT_EPOCH + datetime.timedelta(seconds=epoch_offset)
    world = World(
        OperatorSpec(paths=(str(GALLERY / "random_credentials_ok.py"),), manifests=(CRD,)), seed=seed, epoch=epoch
    )
    try:
        world.run(world.cluster.create(gadget("obj-0")))
        world.run(world.settle())
        obj = world.run(world.cluster.get("secrets", "obj-0-credentials"))
        return base64.b64decode(obj["data"]["password"]).decode(), obj["metadata"]["creationTimestamp"]
    finally:
        world.close()


def test_a_test_with_the_fixtures_draws_as_a_world_of_its_seed(pytester: pytest.Pytester) -> None:
    """So that a reproduction of a run seeded otherwise (``kopf_seed``) replays the same values."""
    seeded = password_in_a_world(1, 3661.5)
    assert seeded != password_in_a_world(0, 0.0)
    pytester.makepyfile(
        test_seeded=f"""
import base64, pytest
from pytest_kopf.driving import settle

@pytest.mark.kopf_seed(1, epoch_offset=3661.5)
async def test_seeded(kopf_cluster, kopf_operator):
    await kopf_cluster.apply({str(CRD)!r})
    await kopf_operator.start(paths=[{str(GALLERY / "random_credentials_ok.py")!r}])
    await kopf_cluster.create({gadget("obj-0")!r})
    await settle(kopf_cluster, kopf_operator)
    obj = await kopf_cluster.get("secrets", "obj-0-credentials")
    assert (base64.b64decode(obj["data"]["password"]).decode(), obj["metadata"]["creationTimestamp"]) == {seeded!r}
"""
    )
    result = pytester.runpytest_inprocess(*INNER_PYTEST)
    assert result.ret == 0, result.stdout.str()


# -- settling: noise refreshed, kopf's schedule --------------------------------------------------------


def test_two_objects_refreshing_their_timestamps_30_s_apart_settle() -> None:
    world = World(OperatorSpec(paths=(str(GALLERY / "last_reconciled_ok.py"),), manifests=(CRD,)))
    try:
        world.run(world.cluster.create(gadget("obj-0", size=1)))
        world.run(world.cluster.sim.advance(30))
        world.run(world.cluster.create(gadget("obj-1", size=2)))
        started = world.loop.time()
        assert world.run(world.settle())
        assert world.loop.time() - started < 200  # not the 900 s of the settling's timeout
        objects = world.run(world.cluster.list(RESOURCE))
        assert [obj["status"]["size"] for obj in objects] == [1, 2]
    finally:
        world.close()


calls: list[float] = []


def retried_timer_registry() -> kopf.OperatorRegistry:
    """A timer that fails its first call (retried after kopf's default 60 s), then observes the spec."""
    registry = kopf.OperatorRegistry()

    @kopf.timer("gadgets", interval=600, registry=registry)
    def observe(spec: Any, patch: Any, **_: Any) -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise kopf.TemporaryError("Not yet.")
        patch.status["size"] = spec.get("size", 0)

    return registry


def test_settling_waits_for_a_timers_retry_beyond_the_quiet_period() -> None:
    calls.clear()
    world = World(OperatorSpec(manifests=(CRD,), registry=retried_timer_registry))
    try:
        world.run(world.cluster.create(gadget("obj-0", size=3)))
        assert world.run(world.settle())
        obj = world.run(world.cluster.get(RESOURCE, "obj-0"))
        assert obj.get("status", {}).get("size") == 3
        assert calls[1] - calls[0] == pytest.approx(60, abs=0.1)
    finally:
        world.close()


def test_settling_waits_for_a_timer_whose_call_was_under_way_when_the_spec_changed() -> None:
    """The timer's results are patched slowly (done, but the answer lost: a 504, retried 1 s later); the spec
    changes meanwhile. That call has seen the old spec: its next one (60 s later) is waited for."""
    world = World(OperatorSpec(paths=(str(GALLERY / "last_reconciled_ok.py"),), manifests=(CRD,)))
    try:
        status_path = "^/apis/checks\\.example/v1/namespaces/default/gadgets/obj-0/status$"
        world.cluster.sim.faults.error(504, applied=True, method="PATCH", path=status_path, count=1)
        world.run(world.cluster.create(gadget("obj-0", size=9)))
        world.run(caught_up())  # the timer's call has patched its results: done, answered 504; retried in 1 s
        world.run(world.cluster.patch(RESOURCE, "obj-0", {"spec": {"size": 2}}))
        assert world.run(world.settle())
        obj = world.run(world.cluster.get(RESOURCE, "obj-0"))
        assert obj["status"]["size"] == 2
    finally:
        world.close()


MIRRORING_TIMER = """
import kopf
from kopf._cogs.clients import api

SETTINGS = kopf.OperatorSettings()


@kopf.timer("gadgets", interval=60)
async def mirror(namespace, patch, **_):
    source = await api.get(f"/api/v1/namespaces/{namespace}/configmaps/source", settings=SETTINGS)
    patch.status["size"] = source["data"]["size"]
"""


def test_settling_waits_for_a_timer_that_has_read_an_older_state(tmp_path: Path) -> None:
    """The timer's call after a change reads the ConfigMap it mirrors as it was before (a stale answer): the
    cluster is quiet, but the timer has not seen the latest state; its next call (60 s later) is waited for."""
    operator = tmp_path / "mirror.py"
    operator.write_text(MIRRORING_TIMER)
    world = World(OperatorSpec(paths=(str(operator),), manifests=(CRD,)))
    try:
        source = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "source"}, "data": {"size": "1"}}
        world.run(world.cluster.create(source))
        world.run(world.cluster.create(gadget("obj-0")))
        assert world.run(world.settle())
        assert world.run(world.cluster.get(RESOURCE, "obj-0"))["status"]["size"] == "1"
        path = "^/api/v1/namespaces/default/configmaps/source$"
        world.cluster.sim.faults.stale_read(method="GET", path=path, count=1)
        world.run(world.cluster.patch("configmaps", "source", {"data": {"size": "2"}}))
        assert world.run(world.settle())
        assert world.cluster.sim.faults.stale_answers == 1
        assert world.run(world.cluster.get(RESOURCE, "obj-0"))["status"]["size"] == "2"
    finally:
        world.close()


# -- stopping while a sync handler runs ----------------------------------------------------------------


@contextlib.contextmanager
def slow_deletion_underway() -> Iterator[World]:
    """A world whose operator's sync delete handler sleeps its 30 s in a thread (10 s of them are over)."""
    world = World(OperatorSpec(paths=(str(GALLERY / "slow_delete_ok.py"),), manifests=(CRD,)))
    try:
        world.run(world.cluster.create(gadget("obj-0")))
        world.run(world.settle())
        world.run(world.cluster.delete(RESOURCE, "obj-0"))
        world.run(world.cluster.sim.advance(10))
        yield world
        assert world.run(world.settle())
        assert world.run(world.cluster.list(RESOURCE)) == []  # a fresh operator has handled the deletion
    finally:
        world.close()


def test_a_graceful_stop_waits_for_a_sync_handler_still_running_instead_of_reporting_a_leak() -> None:
    with slow_deletion_underway() as world:
        stopping = world.loop.time()
        world.run(world.operator.restart())  # no KopfLeakError: the thread ends at 30 s, the stop waits for it
        assert world.loop.time() - stopping == pytest.approx(20, abs=1)


async def _crash(world: World) -> None:
    await world.operator.crash()


def test_a_crash_abandons_a_sync_handler_still_running_as_a_killed_process_would() -> None:
    with slow_deletion_underway() as world:
        world.run(_crash(world))  # its thread wakes up now and goes no further
        world.run(world.operator.restart())
    released = [record for record in world.trace.records if "Released obj-0." in record.getMessage()]
    assert len(released) == 1  # by the fresh operator's handler only


# -- in the checks -------------------------------------------------------------------------------------


def test_the_report_lists_the_noise_learned_per_check() -> None:
    report = check_operator(
        paths=[GALLERY / "random_credentials_ok.py"],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["crash-restart", "convergence"],
        max_examples=4,
        max_steps=5,
        names=["obj-0"],
    )
    assert "Secret obj-0-credentials data.password" in report.noise["crash-restart"]
    assert report.noise["convergence"] == []  # no comparisons, no references to learn from
    assert "learned as nondeterministic: Secret obj-0-credentials data.password" in str(report)


def counting_registry() -> kopf.OperatorRegistry:
    """The bug: a handler counts its own runs into the status (a crash re-runs it); a random id beside it."""
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    def create_fn(status: Any, patch: Any, **_: Any) -> None:
        patch.status["instanceId"] = str(uuid.uuid4())
        patch.status["runs"] = status.get("runs", 0) + 1

    return registry


def test_a_failure_shows_the_difference_with_the_noise_masked() -> None:
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            registry=counting_registry,
            manifests=[CRD],
            resources=[RESOURCE],
            checks=["crash-restart"],
            max_examples=100,
            max_steps=6,
            names=["obj-0"],
        )
    message = str(info.value)
    assert info.value.check == "crash-restart"
    assert "-    runs: 1" in message and "+    runs: 2" in message
    assert f"instanceId: {MASKED}" in message
    assert "learned as nondeterministic from two fault-free runs: Gadget obj-0 status.instanceId" in message
    assert "NOISE = [NoiseField(" in info.value.reproduction


# -- how a state was reached: set aside in the comparisons ---------------------------------------------


def deployment_end_state(*, coalesced: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """deployment_owner_ok.py's end state after a gadget is created empty and then sized: the operator sees the two
    states, or (``coalesced``: its watch closed, its events withheld) only the last one, and writes its Deployment
    once. As it is, and with how it was reached set aside."""
    world = World(OperatorSpec(paths=(str(GALLERY / "deployment_owner_ok.py"),), manifests=(CRD,)))
    try:
        if coalesced:
            world.cluster.sim.faults.withhold_events(1.0, resource="gadgets", count=1)
            world.cluster.sim.store.close_watches()
        world.run(world.cluster.create(gadget("obj-0")))
        world.run(world.cluster.sim.advance(0))
        world.run(world.cluster.patch(RESOURCE, "obj-0", {"spec": {"size": 2, "mode": "fast"}}))
        assert world.run(world.settle())
        state = end_state(world.cluster)
        driven, handlers = [("checks.example/v1", "Gadget")], handler_ids(world.operator)
        return state, history_masked(state, driven=driven, handlers=handlers)
    finally:
        world.close()


def test_how_a_state_was_reached_is_set_aside_when_comparing() -> None:
    """A Deployment written once or twice: its revision and its old ReplicaSet tell the path, not the state."""
    (once, once_aside), (twice, twice_aside) = (
        deployment_end_state(coalesced=True),
        deployment_end_state(coalesced=False),
    )
    shown = difference(twice, once)
    assert shown is not None and "deployment.kubernetes.io/revision" in shown
    assert (
        sum(obj["kind"] == "ReplicaSet" for obj in twice) == 2 and sum(obj["kind"] == "ReplicaSet" for obj in once) == 1
    )
    assert difference(twice_aside, once_aside) is None
    assert {obj["kind"] for obj in once_aside}.isdisjoint({"ReplicaSet", "Pod"})  # compared through their owner


def restamping_registry() -> kopf.OperatorRegistry:
    """An operator that stamps a fresh random id on each object at its creation and at each start of its own."""
    registry = kopf.OperatorRegistry()

    @kopf.on.create("gadgets", registry=registry)
    @kopf.on.resume("gadgets", registry=registry)
    def stamp(patch: Any, **_: Any) -> None:
        patch.status["instanceId"] = str(uuid.uuid4())

    return registry


def _example_of_crash_restart(**operator: Any) -> tuple[bool, frozenset[NoiseField]]:
    """One example of ``crash-restart`` (a create, a crash, a settle; no plans): whether the verdict has made the
    reference (the second fault-free run), and the noise learned."""
    from pytest_kopf.stateful import OperatorMachine
    from pytest_kopf.strategies import CrashRestart, Create, Settle

    machine_class = OperatorMachine.configured(
        "CrashRestartOnce",
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["crash-restart"],
        names=["obj-0"],
        max_plans=0,
        **operator,
    )
    body = {"apiVersion": "checks.example/v1", "kind": "Gadget", "metadata": {"name": "obj-0", "namespace": "default"}}
    machine = machine_class()
    try:
        assert machine.reference is None  # not beside the checked run: no judge of crash-restart masks the noise
        for step in [Create({**body, "spec": {"size": 2}}), CrashRestart(), Settle()]:
            machine.perform(step)
        machine.verify()  # passes: no difference, or only in the noise
        return machine.reference is not None, machine.noise
    finally:
        machine.close()


def test_the_second_fault_free_run_is_made_only_when_a_comparison_differs() -> None:
    made, noise = _example_of_crash_restart(paths=[GALLERY / "crash_child_ok.py"])
    assert not made and not noise  # the same end state with and without the crash: no noise needed


def test_a_difference_that_is_noise_makes_the_second_run_and_passes() -> None:
    made, noise = _example_of_crash_restart(registry=restamping_registry)  # a new id after the crash
    assert made
    assert described(noise) == "Gadget obj-0 status.instanceId"
