"""The kopf_operator fixture: virtual time, isolation, lifecycle, admission, and the errors it makes clear."""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import pytest

from kopf_sim.transports.kubeconfig import write_kubeconfig

from .conftest import BASE, NO_ASYNCIO, ServedCluster

ROOT = Path(__file__).parent.parent.parent

HEADER = """
import asyncio
import threading
import time

import kopf
import pytest
from pytest_kopf.errors import KopfApiError, KopfLeakError, KopfOperatorError, KopfResourceError

def example(name, **spec):
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": spec}
"""

VIRTUAL_TIME = (
    HEADER
    + """
async def test_a_60s_timer_for_an_hour(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()
    calls = []

    @kopf.timer("kopfexamples", interval=60, registry=registry)
    def tick(**_):
        calls.append(1)

    await kopf_cluster.apply("crd.yaml")
    wall, cpu = time.perf_counter(), time.process_time()
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(3600)
    await kopf_operator.stop()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"a 60 s timer for an hour: {len(calls)} calls, {wall:.3f} s wall, {cpu:.3f} s CPU")
    assert 59 <= len(calls) <= 61
    assert cpu < 1.0 and wall < 5.0   # ~0.25 s of both on an idle machine; wall time has a margin for loaded ones

# The same with a handler retried every 60 s (5 API writes per retry in the simulator: progress & touch
# patches of the object & its status, a k8s-event): ~15 ms of CPU per cycle, ~0.9 s of CPU for the hour.
# CPU time is asserted with a wide margin (the wall time of a loaded CI box is not the operator's).
async def test_an_hour_of_60s_intervals(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()
    calls = []

    @kopf.on.create("kopfexamples", registry=registry, retries=None)
    async def every_minute(**_):
        calls.append(asyncio.get_running_loop().time())
        raise kopf.TemporaryError("again in a minute", delay=60)

    await kopf_cluster.apply("crd.yaml")
    wall, cpu = time.perf_counter(), time.process_time()
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(3600)
    await kopf_operator.stop()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert 59 <= len(calls) <= 61
    assert all(60 <= b - a < 61 for a, b in zip(calls, calls[1:]))
    print(f"an hour of 60 s intervals: {len(calls)} calls, {wall:.3f} s wall, {cpu:.3f} s CPU")
    assert cpu < 3.0 and wall < 10.0   # ~0.9 s of CPU on an idle machine; ~1.5 s on a loaded one

async def test_three_retries_of_10_minutes(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()
    attempts = []

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(retry, **_):
        attempts.append(asyncio.get_running_loop().time())
        if retry < 3:
            raise kopf.TemporaryError("not yet", delay=600)
        return "done"

    await kopf_cluster.apply("crd.yaml")
    wall, cpu = time.perf_counter(), time.process_time()
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    obj = await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["create_fn"] == "done",
                                      timeout=3600)
    await kopf_operator.stop()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert len(attempts) == 4
    assert [round(b - a) for a, b in zip(attempts, attempts[1:])] == [600, 600, 600]
    assert obj["status"]["create_fn"] == "done"
    print(f"three retries of 600 s: {wall:.3f} s wall, {cpu:.3f} s CPU")
    assert cpu < 1.0 and wall < 5.0   # ~0.1 s on an idle machine

async def test_timestamps_follow_the_virtual_clock(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    async def create_fn(retry, **_):
        if not retry:
            raise kopf.TemporaryError("later", delay=600)

    await kopf_cluster.apply("crd.yaml")
    await asyncio.sleep(1000)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    obj = await kopf_cluster.wait_for(
        "kex", "ex1", condition=lambda o: "kopf.zalando.org/create_fn" in o["metadata"]["annotations"])
    import datetime, json
    progress = json.loads(obj["metadata"]["annotations"]["kopf.zalando.org/create_fn"])
    created = datetime.datetime.fromisoformat(obj["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    started = datetime.datetime.fromisoformat(progress["started"])
    delayed = datetime.datetime.fromisoformat(progress["delayed"])
    assert created == datetime.datetime(2026, 1, 1, 0, 16, 40, tzinfo=datetime.timezone.utc)  # epoch + 1000 s
    assert datetime.timedelta(0) <= started - created < datetime.timedelta(seconds=1)
    assert delayed - started == datetime.timedelta(seconds=600)
    assert abs((kopf_cluster.sim.now - started).total_seconds()) < 1

async def test_a_slow_sync_handler_holds_the_virtual_time(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry, timeout=0.1)   # 0.1 virtual seconds
    def create_fn(**_):
        time.sleep(0.2)   # real time: the virtual clock stands still meanwhile
        return "slow but in time"

    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    obj = await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["create_fn"], timeout=10)
    assert obj["status"]["create_fn"] == "slow but in time"
"""
)

LIFECYCLE = (
    HEADER
    + """
@pytest.fixture
def registry():
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def started(memo, **_):
        memo.starts = memo.get("starts", 0) + 1

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(name, memo, logger, **_):
        logger.info(f"creating {name}")
        return memo.starts

    return registry

async def test_restart(kopf_cluster, kopf_operator, registry):
    await kopf_cluster.apply("crd.yaml")
    assert kopf_operator.exit_code is None and not kopf_operator.running
    await kopf_operator.start(registry=registry, memo=kopf.Memo())
    await kopf_cluster.create(example("ex1"))
    await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["create_fn"] == 1)
    await kopf_operator.restart()
    assert kopf_operator.running and kopf_operator.registry is registry
    await kopf_cluster.create(example("ex2"))
    await kopf_cluster.wait_for("kex", "ex2", condition=lambda o: o["status"]["create_fn"] == 2)
    await kopf_operator.stop()
    assert (kopf_operator.exception, kopf_operator.exit_code, kopf_operator.running) == (None, 0, False)
    assert "INFO kopf.objects: creating ex1" in kopf_operator.logs
    assert "INFO kopf.objects: creating ex2" in kopf_operator.logs
    assert kopf_operator.logs.count("Stop-flag is set to") == 2

async def test_as_an_async_context_manager(kopf_cluster, kopf_operator, registry):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry, memo=kopf.Memo())
    async with kopf_operator:
        await kopf_cluster.create(example("ex1"))
        await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["create_fn"])
    assert not kopf_operator.running and kopf_operator.exit_code == 0
    async with kopf_operator:   # started again with the same arguments
        assert kopf_operator.running
    assert not kopf_operator.running

async def test_the_tests_own_tasks_survive_the_stop(kopf_cluster, kopf_operator, registry):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry, memo=kopf.Memo())
    helper = asyncio.create_task(asyncio.sleep(3600), name="the test's helper")
    await kopf_operator.stop()
    assert not helper.done()
    helper.cancel()

async def test_the_signals_stay_with_pytest(kopf_cluster, kopf_operator, registry):
    import signal
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry, memo=kopf.Memo())
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # Ctrl+C stops pytest
    await kopf_operator.stop()

async def test_stopped_by_the_fixture_if_not_by_the_test(kopf_cluster, kopf_operator, registry):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry, memo=kopf.Memo())

async def test_crash_at_startup(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def broken(**_):
        raise kopf.PermanentError("no way")

    with pytest.raises(KopfOperatorError, match="The operator has failed to start: ActivityError: .*no way"):
        await kopf_operator.start(registry=registry)
    assert kopf_operator.exit_code == 1
    assert "no way" in str(kopf_operator.exception)

async def test_modules_and_settings(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("crd.yaml")
    settings = kopf.OperatorSettings()
    settings.persistence.finalizer = "example.com/our-finalizer"
    await kopf_operator.start(modules=["ops.handlers"], settings=settings, namespaces=["default"])
    assert kopf_operator.settings is settings
    await kopf_cluster.create(example("ex1"))
    obj = await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["from_module"])
    assert obj["metadata"]["finalizers"] == ["example.com/our-finalizer"]
    await kopf_operator.restart()   # the module loaded anew, as by a new process: the same handlers
    assert len(kopf_operator.registry.changing.get_all_handlers()) == 2

@pytest.mark.kopf_sim_only
async def test_a_401_spends_the_credentials_and_never_falls_back_to_the_environment(
        kopf_cluster, kopf_operator, monkeypatch):
    # The re-login gets the test's credentials again (not the environment's kubeconfig), which kopf refuses
    # as already spent, as it would on a real cluster: a crash, reported as such.
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(paths=["ops/handlers.py"])
    assert [h.id for h in kopf_operator.registry.activities.get_all_handlers()] == ["pytest-kopf"]
    kopf_cluster.sim.faults.error(401, resource="kopfexamples", method="PATCH", count=1)
    await kopf_cluster.create(example("ex1"))
    while kopf_operator.running:
        await asyncio.sleep(1)
    await kopf_operator.stop()
    assert kopf_operator.exit_code == 1
    assert type(kopf_operator.exception).__name__ == "LoginError"
    assert "Activity 'pytest-kopf' succeeded" in kopf_operator.logs
    assert "kubeconfig" not in kopf_operator.logs.lower()

async def test_isolation_first(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(paths=["ops/handlers.py"])
    await kopf_cluster.create(example("leftover"))
    await kopf_cluster.wait_for("kex", "leftover", condition=lambda o: o["status"]["from_module"])

async def test_isolation_second(kopf_cluster, kopf_operator):
    assert kopf.get_default_registry().changing.get_all_handlers() == []
    assert [t for t in asyncio.all_tasks() if t.get_name().startswith("kopf operator")] == []
    await kopf_cluster.apply("crd.yaml")
    assert await kopf_cluster.list("kex") == []
    await kopf_operator.start(paths=["ops/handlers.py"])
    assert len(kopf_operator.registry.changing.get_all_handlers()) == 2
"""
)

HANDLERS_MODULE = """
import kopf

@kopf.on.create("kopfexamples")
def from_module(**_):
    return "yes"

@kopf.on.delete("kopfexamples")
def bye(**_):
    pass
"""

ADMISSION = (
    HEADER
    + """
import kopf_sim

@pytest.fixture
def registry():
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings, **_):
        # What an operator does for a real cluster; under --kopf-sim, no port is opened.
        settings.admission.server = kopf.WebhookServer(port=1)

    @kopf.on.validate("kopfexamples", registry=registry)
    def check_field(spec, warnings, **_):
        if spec.get("field") == "bad":
            raise kopf.AdmissionError("The field must not be bad.", code=400)

    @kopf.on.mutate("kopfexamples", registry=registry)
    def defaults(spec, patch, **_):
        if "numbers" not in spec:
            patch.spec["numbers"] = [1, 2, 3]

    return registry

async def test_admission_in_process(kopf_cluster, kopf_operator, registry):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry)
    configs = await kopf_cluster.wait_for("validatingwebhookconfigurations", "auto.kopf.dev")
    assert [hook["name"] for hook in configs["webhooks"]] == ["check-field.auto.kopf.dev"]
    # The operator creates the two configurations one after the other: wait for the second one as well.
    mutating = await kopf_cluster.wait_for("mutatingwebhookconfigurations", "auto.kopf.dev")
    assert [hook["name"] for hook in mutating["webhooks"]] == ["defaults.auto.kopf.dev"]
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create(example("bad", field="bad"))
    assert err.value.code == 400
    assert 'admission webhook "check-field.auto.kopf.dev" denied the request: The field must not be bad.' \\
        in err.value.message
    created = await kopf_cluster.create(example("good", field="ok"))
    assert created["spec"] == {"field": "ok", "numbers": [1, 2, 3]}
    await kopf_operator.stop()
    assert kopf_operator.exception is None
    assert isinstance(kopf_operator.settings.admission.server, kopf.WebhookServer)   # the operator's own, back
    assert kopf_operator.settings.admission.managed is None
    assert kopf_cluster.sim.admission.in_process == {}
    configs = await kopf_cluster.get("validatingwebhookconfigurations", "auto.kopf.dev")
    assert configs is None or not configs.get("webhooks")   # the non-persistent webhooks are removed on exit
    assert (await kopf_cluster.create(example("bad", field="bad")))["spec"] == {"field": "bad"}
"""
)


def make_project(pytester: pytest.Pytester) -> None:
    shutil.copy(ROOT / "examples" / "crd.yaml", pytester.path / "crd.yaml")
    (pytester.path / "ops").mkdir()
    (pytester.path / "ops" / "__init__.py").write_text("")
    (pytester.path / "ops" / "handlers.py").write_text(HANDLERS_MODULE)


def test_virtual_time(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    pytester.makepyfile(test_virtual_time=VIRTUAL_TIME)
    started = time.perf_counter()
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "-s")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*an hour of 60 s intervals: 6? calls, * s wall, * s CPU*"])
    assert time.perf_counter() - started < 10  # hours of virtual time; the 0.2 s sleep is the only real wait


def test_lifecycle_and_isolation(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    pytester.makepyfile(test_lifecycle=LIFECYCLE)
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=10)


def test_admission_in_sim_mode(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    pytester.makepyfile(test_admission=ADMISSION)
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=1)


# -- clear errors --------------------------------------------------------------------------------


def run_one(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    make_project(pytester)
    pytester.makepyfile(test_it=HEADER + source)
    return pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, *args)


def test_deadlock_is_reported(pytester: pytest.Pytester) -> None:
    result = run_one(
        pytester,
        """
async def test_stuck(kopf_cluster, kopf_operator):
    await kopf_operator.start(registry=kopf.OperatorRegistry())
    await kopf_operator.stop()
    await asyncio.Event().wait()
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*DeadlockError: Deadlock at loop time*", "*at test_stuck*"])


def test_a_stuck_test_under_a_running_operator_hits_the_time_limit(pytester: pytest.Pytester) -> None:
    # A running operator always has timers ahead, so the virtual time flies; the ini's limit stops it.
    pytester.makeini("[pytest]\nkopf_time_limit = 3600\n")
    result = run_one(
        pytester,
        """
async def test_stuck(kopf_cluster, kopf_operator):
    await kopf_operator.start(registry=kopf.OperatorRegistry())
    await asyncio.Event().wait()
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TimeLimitError: The loop time would pass its limit of 3600.0 s*", "*at test_stuck*"])


def test_leaked_tasks_and_threads_are_named(pytester: pytest.Pytester) -> None:
    result = run_one(
        pytester,
        """
async def test_a_stubborn_task(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    async def spawn(**_):
        async def stubborn():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                await asyncio.sleep(3600)   # ignores the first cancellation
        asyncio.create_task(stubborn(), name="stubborn-task")

    await kopf_operator.start(registry=registry)
    await kopf_operator.stop()

release = threading.Event()

async def test_a_thread(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def spawn(**_):
        threading.Thread(target=release.wait, name="leaky-thread", daemon=True).start()

    await kopf_operator.start(registry=registry)
    try:
        await kopf_operator.stop()
    finally:
        release.set()

release_at_last = threading.Event()

@pytest.fixture(scope="module", autouse=True)
def release_the_threads():
    yield
    release_at_last.set()

async def test_left_running_at_the_end(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def spawn(**_):
        threading.Thread(target=release_at_last.wait, name="leaky-thread-2", daemon=True).start()

    await kopf_operator.start(registry=registry)
""",
    )
    result.assert_outcomes(failed=2, passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*KopfLeakError: The operator has not stopped in 60.0 s after the stop was requested; "
            "its tasks still running: 'kopf operator #*', 'stubborn-task'.",
            "*Task 'stubborn-task' running test_a_stubborn_task.<locals>.spawn.<locals>.stubborn():",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*KopfLeakError: The operator has left tasks or threads behind after it has stopped:",
            "*- thread 'leaky-thread' (daemon)",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_left_running_at_the_end*", "*- thread 'leaky-thread-2' (daemon)"]
    )


def test_a_sync_daemon_left_sleeping_is_named_with_what_it_waits_for(pytester: pytest.Pytester) -> None:
    result = run_one(
        pytester,
        """
async def test_a_sleeping_daemon(kopf_cluster, kopf_operator):
    registry = kopf.OperatorRegistry()

    @kopf.daemon("kopfexamples", registry=registry)
    def sleeper(stopped, **_):
        while True:
            time.sleep(30)   # never looks at the stop-flag (the stop waits 60 s for it, in vain)

    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    await asyncio.sleep(1)
    await kopf_operator.stop()
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*KopfLeakError: The operator has left tasks or threads behind after it has stopped:",
            "*- thread *",
            "*Their jobs:",
            "*- *sleeper, waiting until loop time *",
            "*time.sleep(30)*",
        ]
    )
    result.stdout.fnmatch_lines(["*sleep with `stopped.wait(seconds)` instead*"])


def test_unserved_resources_are_named(pytester: pytest.Pytester) -> None:
    result = run_one(
        pytester,
        """
async def test_no_crd(kopf_cluster, kopf_operator):
    await kopf_operator.start(paths=["ops/handlers.py"])
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*KopfResourceError: The operator has handlers for resources that the cluster does not serve:",
            "*  - kopfexamples: handlers 'from_module', 'bye'",
            "*Apply their CRDs before starting the operator (e.g. await kopf_cluster.apply('crd.yaml')), "
            "or start it with check_resources=False if they appear later.",
        ]
    )


def test_unserved_resources_can_be_allowed(pytester: pytest.Pytester) -> None:
    result = run_one(
        pytester,
        """
async def test_crd_later(kopf_cluster, kopf_operator):
    await kopf_operator.start(paths=["ops/handlers.py"], check_resources=False)
    await kopf_cluster.apply("crd.yaml")
    await kopf_cluster.create(example("ex1"))
    await kopf_cluster.wait_for("kex", "ex1", condition=lambda o: o["status"]["from_module"])
""",
    )
    result.assert_outcomes(passed=1)


def test_a_module_that_fails_to_import(pytester: pytest.Pytester) -> None:
    (pytester.path / "broken.py").write_text("import kopf\nimport no_such_module_here\n")
    result = run_one(
        pytester,
        """
async def test_broken_file(kopf_cluster, kopf_operator):
    await kopf_operator.start(paths=["broken.py"])

async def test_broken_module(kopf_cluster, kopf_operator):
    await kopf_operator.start(modules=["broken"])

async def test_missing_file(kopf_cluster, kopf_operator):
    await kopf_operator.start(paths=["nowhere.py"])
""",
    )
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*KopfOperatorError: Cannot load the operator from 'broken.py': the file has failed to import "
            "with ModuleNotFoundError: No module named 'no_such_module_here'",
            "*broken.py*line 2*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*KopfOperatorError: Cannot load the operator's module 'broken': "
            "it has failed to import with ModuleNotFoundError: No module named "
            "'no_such_module_here'"
        ]
    )
    result.stdout.fnmatch_lines(["*KopfOperatorError: Cannot load the operator from 'nowhere.py': no such file*"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_an_unreachable_cluster_in_real_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    port = free_port()
    write_kubeconfig(kubeconfig, server=f"http://127.0.0.1:{port}", token="x")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    result = run_one(
        pytester,
        """
async def test_it(kopf_cluster, kopf_operator):
    await kopf_operator.start(paths=["ops/handlers.py"])
""",
        "--kopf-real",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*The Kubernetes API at http://127.0.0.1:{port} (kubeconfig context 'kopf-sim')"
            " is unreachable: Cannot connect to host 127.0.0.1:*"
        ]
    )


def test_lifecycle_in_real_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, served_cluster: ServedCluster
) -> None:
    make_project(pytester)
    pytester.makepyfile(test_lifecycle=LIFECYCLE)
    monkeypatch.setenv("KUBECONFIG", str(served_cluster.kubeconfig))
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE, "--kopf-real", "-k", "restart or context or crash")
    result.assert_outcomes(passed=3, deselected=7)
