"""The pytest11 entry point of the plugin: options, markers, the test loop, ``kopf_cluster`` & ``kopf_operator``.

Loop handling: every test that uses a kopf fixture (anything depending on ``kopf_loop``)
gets a fresh event loop (:mod:`pytest_kopf._running`): a virtual-time loop in sim mode, a
regular one in real mode or with ``@pytest.mark.kopf_real_time``. The kopf fixtures are
sync fixtures that run their async setup and teardown in that loop; the async test itself
runs in it too, through this plugin's ``pytest_pyfunc_call`` -- with or without
pytest-asyncio (in its auto mode, pytest-asyncio wraps the test function; the original
coroutine function is kept at collection time and called here instead).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import gc
import inspect
import math
import pathlib
import re
import secrets
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from kopf_sim.controllers import ControllerSettings, parse_selection
from kopf_sim.timing.virtualtime import DEFAULT_EPOCH, VirtualTimeLoop

from . import _kubeconfig as kubeconfig
from . import _progress as progress
from ._cleanup import release_objects
from ._clientconfig import RealClientDefaults, routed_clients
from ._clocks import is_operator_code, virtual_clocks, virtualize_module
from ._progress import TerminalProgress
from ._randomness import seeded
from ._rbac import VIOLATIONS_KEY, RbacCheck, RbacCheckError, RbacSession, failed_report
from ._realcluster import RealKopfCluster
from ._report import location
from ._report.location import ReportTarget
from ._running import TestLoop
from .cluster import KopfCluster, SimKopfCluster
from .errors import KopfClusterUnreachable, KopfConfigError, OperatorCheckFailed

if TYPE_CHECKING:
    from .operator import KopfOperator  # kopf is imported only when a test needs it

__all__ = ["KopfSettings", "kopf_cluster", "kopf_loop", "kopf_mode", "kopf_operator"]

SIM, REAL = "sim", "real"
MARKERS = {
    "kopf_sim_only": "run the test only in sim mode (--kopf-sim); skipped with --kopf-real",
    "kopf_real_only": "run the test only in real mode (--kopf-real); skipped with --kopf-sim",
    "kopf_real_time": "run the test in real time even in sim mode (e.g. for kopf_cluster.kubeconfig())",
    "kopf_controllers": "sim mode: which built-in controllers run, and their timings, e.g. "
    "kopf_controllers('none'), kopf_controllers('all', '-cronjobs', nodes=5, pod_ready_delay=3)",
    "kopf_seed": "sim mode: the seed of the randomness of the operator's code (random, secrets, uuid, os.urandom) "
    "and of the simulated cluster's uids (0 by default), and a shift of the virtual clocks' epoch in seconds, "
    "e.g. kopf_seed(1, epoch_offset=3661.5)",
}


@dataclasses.dataclass(frozen=True)
class KopfSettings:
    """The plugin's settings for the session (from the command line and the ini file)."""

    mode: str = SIM
    context: str | None = None
    record_dir: pathlib.Path | None = None
    report_dir: pathlib.Path | None = None
    time_limit: float | None = None
    thread_timeout: float | None = 60.0
    gc_freeze: bool = True
    reuse_threads: bool = True
    rbac_as: str | None = None  # the ini's kopf_rbac_as: enforce RBAC for the operators, acting as this user


SETTINGS_KEY = pytest.StashKey[KopfSettings]()
RBAC_KEY = pytest.StashKey[RbacSession]()
ORIGINAL_FUNCTION_KEY = pytest.StashKey[Callable[..., Any]]()
LOOP_KEY = pytest.StashKey[TestLoop]()
PROGRESS_KEY = pytest.StashKey[TerminalProgress]()
REPORT_KEY = pytest.StashKey[ReportTarget]()
GC_THRESHOLDS_KEY = pytest.StashKey[tuple[int, int, int]]()
#: The youngest generation's threshold during a session of kopf tests (Python's default is 700).
GC_YOUNG_THRESHOLD = 7000


# -- options & markers -----------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kopf", "kopf: operators on a simulated or a real Kubernetes cluster")
    # Both flags are collected (not the last one winning): both given is a usage error.
    group.addoption(
        "--kopf-sim",
        action="append_const",
        const=SIM,
        dest="kopf_modes",
        default=None,
        help="run the kopf tests against fresh simulated clusters in virtual time (default)",
    )
    group.addoption(
        "--kopf-real",
        action="append_const",
        const=REAL,
        dest="kopf_modes",
        help="run the kopf tests against the cluster of the kubeconfig context, in real time",
    )
    group.addoption(
        "--kopf-context",
        dest="kopf_context",
        default=None,
        metavar="NAME",
        help="the kubeconfig context for --kopf-real (default: the current context)",
    )
    group.addoption(
        "--kopf-record",
        dest="kopf_record",
        default=None,
        metavar="DIR",
        help="record each test's watch events into DIR, one log per test, overwritten by a later run "
        "(docs/replay.md); in real mode, those of the test's namespace",
    )
    group.addoption(
        "--kopf-report",
        dest="kopf_report",
        default=None,
        metavar="DIR",
        help="write the HTML report of each failed check of check_operator into DIR (default: kopf-reports/ "
        "in pytest's temporary directory); the failure's message names the file",
    )
    group.addoption(
        "--kopf-rbac-report",
        dest="kopf_rbac_report",
        default=None,
        metavar="PATH",
        help="record the requests of the operators under test (sim mode) and write the minimal Role/ClusterRole "
        "YAML that allows them into PATH (merged over pytest-xdist workers)",
    )
    group.addoption(
        "--kopf-rbac-check",
        dest="kopf_rbac_check",
        default=None,
        metavar="RBAC.YAML",
        help="fail every test whose operator makes a request that the Roles/ClusterRoles of this file do not "
        "allow, naming the verb, resource and namespace (sim mode)",
    )
    parser.addini("kopf_mode", "the mode of the kopf tests: sim (default) or real", default=SIM)
    parser.addini(
        "kopf_rbac_as",
        "enforce RBAC for the operators under test in sim mode, acting as this user "
        "(e.g. system:serviceaccount:NS:NAME); their requests that the test's RBAC objects do not allow are 403",
        default="",
    )
    parser.addini("kopf_context", "the kubeconfig context for the real mode", default="")
    parser.addini(
        "kopf_controllers",
        "the built-in controllers of the simulated clusters: all (default), none, "
        "or a list such as 'pods,replicasets,deployments' or 'all,-cronjobs'",
        default="all",
    )
    parser.addini(
        "kopf_time_limit", "virtual seconds a sim-mode test may last before it fails (none by default)", default=""
    )
    parser.addini(
        "kopf_thread_timeout",
        "real seconds that an operator's thread may compute (or wait in a way the "
        "virtual clock does not know of) while holding the virtual time, before the test fails with the "
        "thread's stack (default: 60; 'none': no limit)",
        default="60",
    )
    parser.addini(
        "kopf_gc_freeze",
        "after the collection, move the objects that exist by then out of the garbage "
        "collector's scans, and collect the youngest generation less often (only if kopf tests are "
        "collected; default: true)",
        default="true",
    )
    parser.addini(
        "kopf_reuse_threads",
        "run the sync handlers of the operators under test on worker threads kept "
        "for the whole session, rather than on a new thread pool per test (default: true)",
        default="true",
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    flags = list(dict.fromkeys(config.getoption("kopf_modes") or ()))
    if len(flags) > 1:
        raise pytest.UsageError("--kopf-sim and --kopf-real cannot be given together: choose one mode.")
    mode = flags[0] if flags else str(config.getini("kopf_mode") or SIM).strip().lower()
    if mode not in (SIM, REAL):
        raise pytest.UsageError(f"kopf_mode must be {SIM!r} or {REAL!r}, got {mode!r}.")
    context = config.getoption("kopf_context") or str(config.getini("kopf_context") or "").strip() or None
    record = config.getoption("kopf_record")
    report = config.getoption("kopf_report")
    limit_text = str(config.getini("kopf_time_limit") or "").strip()
    time_limit = _seconds("kopf_time_limit", limit_text, "") if limit_text else None
    thread_text = str(config.getini("kopf_thread_timeout") or "").strip().lower()
    thread_timeout = None if thread_text in ("", "none") else _seconds("kopf_thread_timeout", thread_text, " or 'none'")
    config.stash[SETTINGS_KEY] = KopfSettings(
        mode=mode,
        context=context,
        record_dir=_directory("--kopf-record", record, "one log per test") if record else None,
        report_dir=_directory("--kopf-report", report, "one report per failed check") if report else None,
        time_limit=time_limit,
        thread_timeout=thread_timeout,
        gc_freeze=_truth("kopf_gc_freeze", config.getini("kopf_gc_freeze")),
        reuse_threads=_truth("kopf_reuse_threads", config.getini("kopf_reuse_threads")),
        rbac_as=str(config.getini("kopf_rbac_as") or "").strip() or None,
    )
    config.stash[RBAC_KEY] = _rbac_session(config)


def _rbac_session(config: pytest.Config) -> RbacSession:
    """The records and checks of --kopf-rbac-report and --kopf-rbac-check (each worker has its own)."""
    report = config.getoption("kopf_rbac_report")
    check_path = config.getoption("kopf_rbac_check")
    try:
        check = RbacCheck.load(pathlib.Path(check_path)) if check_path else None
    except RbacCheckError as exc:
        raise pytest.UsageError(str(exc)) from None
    workerinput = getattr(config, "workerinput", None)
    worker = str(workerinput["workerid"]) if isinstance(workerinput, dict) else None
    session = RbacSession(pathlib.Path(report).resolve() if report else None, check, worker)
    if worker is None:
        session.clear_parts()
    return session


def _seconds(name: str, text: str, alternative: str) -> float:
    """A positive, finite number of seconds: a limit of 0 or less would fail every test, not limit it."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise pytest.UsageError(f"{name} must be a positive number of seconds{alternative}, got {text!r}.")
    return seconds


_TRUTHS = dict.fromkeys(("true", "t", "yes", "y", "on", "1"), True) | dict.fromkeys(
    ("false", "f", "no", "n", "off", "0"), False
)


def _truth(name: str, value: object) -> bool:
    """An ini flag; a wrong value names the option and what it takes (pytest's own "bool" says neither)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in _TRUTHS:
        raise pytest.UsageError(f"{name} must be true or false (or yes/no, on/off, 1/0), got {str(value)!r}.")
    return _TRUTHS[text]


def _directory(name: str, option: str, what: str) -> pathlib.Path:
    """The directory of --kopf-record or --kopf-report (made when first needed); a file there is a usage error at
    once, not a FileExistsError in every test."""
    path = pathlib.Path(option).resolve()
    existing = next(parent for parent in [path, *path.parents] if parent.exists())
    if not existing.is_dir():
        where = "is a file" if existing == path else f"is under a file ({existing})"
        raise pytest.UsageError(f"{name} takes a directory ({what}), but {option} {where}.")
    return path


def settings_of(config: pytest.Config) -> KopfSettings:
    return config.stash.get(SETTINGS_KEY, KopfSettings())


def pytest_report_header(config: pytest.Config) -> str:
    settings = settings_of(config)
    recording = f", recording into {settings.record_dir}" if settings.record_dir else ""
    if settings.mode == REAL:
        return f"kopf: real mode (context: {settings.context or 'current'}){recording}"
    return f"kopf: sim mode (virtual time){recording}"


def uses_kopf(item: Any) -> bool:
    """Whether the test uses the kopf fixtures (they all depend on ``kopf_loop``)."""
    return "kopf_loop" in getattr(item, "fixturenames", ())


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mode = settings_of(config).mode
    for item in items:
        if item.get_closest_marker("kopf_sim_only") is not None and mode != SIM:
            item.add_marker(
                pytest.mark.skip(reason="kopf_sim_only: runs only with --kopf-sim (this run uses --kopf-real)")
            )
        if item.get_closest_marker("kopf_real_only") is not None and mode != REAL:
            item.add_marker(
                pytest.mark.skip(reason="kopf_real_only: runs only with --kopf-real (this run uses --kopf-sim)")
            )
        # Keep the original coroutine function: other plugins (pytest-asyncio) may wrap it at run time.
        if isinstance(item, pytest.Function) and uses_kopf(item):
            function = item.obj
            if inspect.iscoroutinefunction(function):
                item.stash[ORIGINAL_FUNCTION_KEY] = function


def pytest_collection_finish(session: pytest.Session) -> None:
    """Spare the kopf tests the rescans of pytest's own objects by the garbage collector.

    A kopf test makes much short-lived cyclic garbage (tasks, HTTP exchanges), so the collector's
    oldest generation runs every few tests, and each run scans everything alive: with the modules
    and the collected items of a test session, that costs milliseconds per test. Frozen objects are
    still freed by reference counting; only their cycles wait (as the long-lived objects would anyway).
    The youngest generation is collected less often, too: most of a test's objects are gone by then
    (a collection traverses the objects alive, so fewer ones traverse fewer), which halves the time
    in the collector; a session keeps at most some thousands more objects of garbage cycles.
    """
    if settings_of(session.config).gc_freeze and any(uses_kopf(item) for item in session.items):
        session.config.stash[GC_THRESHOLDS_KEY] = tune_gc()


def tune_gc() -> tuple[int, int, int]:
    """Freeze the objects alive now, and collect the youngest generation less often; the thresholds before."""
    gc.collect()
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], GC_YOUNG_THRESHOLD), *thresholds[1:])
    return thresholds


def pytest_sessionstart(session: pytest.Session) -> None:
    """The reports of failed checks go to --kopf-report (or the session's temporary directory); the progress line
    of long checks goes through the terminal reporter (there by now), unless told to be quiet."""
    config = session.config
    target = ReportTarget(functools.cache(functools.partial(_report_dir, config)))
    location.register(target)
    config.stash[REPORT_KEY] = target
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is None or reporter.verbosity < 0 or hasattr(config, "workerinput"):  # -q; an xdist worker
        return
    display = TerminalProgress(reporter, config.pluginmanager.getplugin("capturemanager"), live=reporter.isatty())
    progress.register(display)
    config.stash[PROGRESS_KEY] = display


def _report_dir(config: pytest.Config) -> pathlib.Path:
    chosen = settings_of(config).report_dir
    if chosen is not None:
        return chosen
    factory = getattr(config, "_tmp_path_factory", None)  # the tmp_path_factory fixture's (pytest's tmpdir plugin)
    if factory is None:  # the tmpdir plugin disabled (-p no:tmpdir)
        return pathlib.Path(tempfile.mkdtemp(prefix="kopf-reports-"))
    return pathlib.Path(factory.getbasetemp()) / "kopf-reports"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """The test running now names the reports of its failed checks."""
    target = item.config.stash.get(REPORT_KEY, None)
    if target is None:
        return (yield)
    target.test = item.nodeid
    try:
        return (yield)
    finally:
        target.test = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """A check that failed in a test of its own (a user's OperatorMachine), not in check_operator: its report too."""
    report = yield
    failed_report(item, report)  # --kopf-rbac-check: the operator's requests outside the given RBAC
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, OperatorCheckFailed) and error.evidence is not None and not error.report:
        from ._report.failures import reported

        path = reported(error).report
        if path:
            report.sections.append(("kopf report", f"The report of the failed check (open it in a browser): {path}"))
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    rbac = session.config.stash.get(RBAC_KEY, None)
    if rbac is not None:
        rbac.finish()  # --kopf-rbac-report: a worker's records, or the merged report
    target = session.config.stash.get(REPORT_KEY, None)
    if target is not None:
        location.unregister(target)
        del session.config.stash[REPORT_KEY]
    display = session.config.stash.get(PROGRESS_KEY, None)
    if display is not None:
        progress.unregister(display)
        del session.config.stash[PROGRESS_KEY]
    thresholds = session.config.stash.get(GC_THRESHOLDS_KEY, None)
    if thresholds is not None:
        gc.set_threshold(*thresholds)
        del session.config.stash[GC_THRESHOLDS_KEY]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run an async test that uses the kopf fixtures in the test's own loop (that of its fixtures)."""
    function = pyfuncitem.stash.get(ORIGINAL_FUNCTION_KEY, None)
    test_loop = pyfuncitem.stash.get(LOOP_KEY, None)
    if function is None or test_loop is None:
        return None
    names = inspect.signature(function).parameters
    kwargs = {name: pyfuncitem.funcargs[name] for name in names if name in pyfuncitem.funcargs}
    test_loop.run(function(**kwargs))
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> object | None:
    """Run the async fixtures of a test that uses the kopf fixtures in the test's own loop (with virtual time).

    With or without pytest-asyncio, in its strict mode (``@pytest.fixture`` or ``@pytest_asyncio.fixture``)
    and in its auto mode (which wraps the fixture function: the original is unwrapped here). Such a fixture
    sets up, and tears down, in the same loop as the kopf fixtures and the test itself.
    """
    function = inspect.unwrap(fixturedef.func)
    is_generator = inspect.isasyncgenfunction(function)
    if not is_generator and not inspect.iscoroutinefunction(function):
        return None
    if fixturedef.scope != "function" or not uses_kopf(request.node):
        return None
    test_loop: TestLoop = request.getfixturevalue("kopf_loop")
    kwargs = {name: request.getfixturevalue(name) for name in fixturedef.argnames}
    if request.instance is not None and _takes_self(function, fixturedef.argnames):
        function = function.__get__(request.instance)  # a fixture defined in a test class
    key = fixturedef.cache_key(request)  # type: ignore[arg-type]
    value: object
    try:
        if is_generator:
            generator = function(**kwargs)
            value = test_loop.run(_next_of(generator, fixturedef.argname, first=True))
            fixturedef.addfinalizer(functools.partial(_finish_generator, test_loop, generator, fixturedef.argname))
        else:
            value = test_loop.run(_awaited(function(**kwargs)))
    except BaseException as exc:
        fixturedef.cached_result = (None, key, (exc, exc.__traceback__))
        raise
    fixturedef.cached_result = (value, key, None)
    return value


async def _awaited(awaitable: Any) -> object:
    return await awaitable


def _takes_self(function: Callable[..., Any], argnames: tuple[str, ...]) -> bool:
    parameters = list(inspect.signature(function).parameters)
    return bool(parameters) and parameters[0] not in argnames


async def _next_of(generator: Any, name: str, *, first: bool) -> Any:
    try:
        return await generator.__anext__()
    except StopAsyncIteration:
        if first:
            raise ValueError(f"The async fixture {name!r} did not yield a value.") from None
        return None


def _finish_generator(test_loop: TestLoop, generator: Any, name: str) -> None:
    """The teardown of an async generator fixture: the rest of it, in the test's loop (while it still exists)."""
    if test_loop.closed:
        return
    test_loop.run(_last_of(generator, name))


async def _last_of(generator: Any, name: str) -> None:
    try:
        await generator.__anext__()
    except StopAsyncIteration:
        return
    await generator.aclose()
    raise ValueError(f"The async fixture {name!r} yielded more than once.")


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture
def kopf_mode(request: pytest.FixtureRequest) -> str:
    """The mode of this run: ``"sim"`` or ``"real"``."""
    return settings_of(request.config).mode


@pytest.fixture
def kopf_loop(request: pytest.FixtureRequest) -> Iterator[TestLoop]:
    """The event loop of the test: virtual time in sim mode (unless marked kopf_real_time).

    The kopf fixtures set up and tear down in it, and async tests using them run in it.
    Other fixtures can run coroutines in it with ``kopf_loop.run(coro)`` (e.g. ``kopf_operator``).
    """
    settings = settings_of(request.config)
    virtual = settings.mode == SIM and request.node.get_closest_marker("kopf_real_time") is None
    seed, epoch_offset = seeding(request)
    test_loop = TestLoop(
        virtual=virtual,
        time_limit=settings.time_limit if virtual else None,
        thread_timeout=settings.thread_timeout,
        epoch=DEFAULT_EPOCH + datetime.timedelta(seconds=epoch_offset),
    )
    if isinstance(test_loop.loop, VirtualTimeLoop) and "kopf" in sys.modules:
        # kopf's wall clock (utcnow, for the timestamps in objects) follows the virtual time; kopf_operator
        # pins it too (kopf is not imported for the tests that do not use it).
        from kopf._kits.testing import pin_utcnow_to_loop

        pin_utcnow_to_loop(test_loop.loop.now(), test_loop.loop)
    request.node.stash[LOOP_KEY] = test_loop
    module = getattr(request, "module", None) if test_loop.virtual else None
    undo = virtualize_module(module) if module is not None and is_operator_code(module) else None
    try:
        with (
            virtual_clocks() if test_loop.virtual else contextlib.nullcontext(),
            seeded(test_loop.loop, seed) if test_loop.virtual else contextlib.nullcontext(),
        ):
            yield test_loop
    finally:
        if undo is not None:
            undo()
        del request.node.stash[LOOP_KEY]
        test_loop.close()


def seeding(request: pytest.FixtureRequest) -> tuple[int, float]:
    """The seed and the epoch's shift (seconds) of a sim-mode test (the ``kopf_seed`` marker; 0 and 0 without it)."""
    marker = request.node.get_closest_marker("kopf_seed")
    if marker is None:
        return 0, 0.0
    try:
        bound = inspect.signature(_seed_arguments).bind(*marker.args, **marker.kwargs)
    except TypeError as exc:
        raise pytest.UsageError(f"kopf_seed takes a seed and an optional epoch_offset=: {exc}") from None
    seed, offset = bound.arguments.get("seed"), bound.arguments.get("epoch_offset", 0.0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise pytest.UsageError(f"kopf_seed: the seed must be an integer, got {seed!r}.")
    if not isinstance(offset, int | float) or isinstance(offset, bool) or not math.isfinite(offset):
        raise pytest.UsageError(f"kopf_seed: epoch_offset must be a number of seconds, got {offset!r}.")
    return seed, float(offset)


def _seed_arguments(seed: int, *, epoch_offset: float = 0.0) -> None:
    """The signature of the ``kopf_seed`` marker's arguments."""


@pytest.fixture
def kopf_cluster(
    request: pytest.FixtureRequest,
    kopf_loop: TestLoop,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[KopfCluster]:
    """A fresh simulated cluster (sim mode), or the kubeconfig's cluster with a namespace of the test's own."""
    settings = settings_of(request.config)

    def tmp_dir() -> pathlib.Path:
        return tmp_path_factory.mktemp("kopf-cluster")

    cluster: KopfCluster
    record = None
    if settings.record_dir is not None:
        record = settings.record_dir / f"{_slug(request.node.nodeid, 200)}.jsonl"
    if settings.mode == SIM:
        cluster = SimKopfCluster(
            loop=kopf_loop.loop,
            tmp_dir=tmp_dir,
            record_path=record,
            controllers=controller_settings(request),
            seed=seeding(request)[0],
        )
    else:
        try:
            login = kubeconfig.load(context=settings.context)
        except KopfConfigError as exc:
            pytest.fail(str(exc), pytrace=False)
        cluster = RealKopfCluster(
            login=login, namespace=_namespace_name(request.node.name), tmp_dir=tmp_dir, record_path=record
        )
    try:
        kopf_loop.run(cluster.setup())
    except (KopfClusterUnreachable, KopfConfigError) as exc:
        pytest.fail(str(exc), pytrace=False)
    with contextlib.ExitStack() as clients:  # left after the cluster's teardown
        if isinstance(cluster, SimKopfCluster):
            if settings.rbac_as:
                cluster.rbac(enforce=True, as_=settings.rbac_as)
            rbac = request.config.stash.get(RBAC_KEY, None)
            if rbac is not None and (rbac.report is not None or rbac.check is not None):
                clients.callback(rbac.watch(cluster.sim.access, request.node.stash.setdefault(VIOLATIONS_KEY, [])))
        if isinstance(cluster, SimKopfCluster):  # the official clients configured the documented ways reach it
            clients.enter_context(routed_clients(kopf_loop.loop, cluster.sim.server, _clients_dir(tmp_path_factory)))
        elif isinstance(cluster, RealKopfCluster):  # as kopf's login via the official client leaves it
            defaults = RealClientDefaults(paths=cluster.login.paths, context=cluster.login.context)
            defaults.activate()
            clients.callback(defaults.deactivate)
        try:
            yield cluster
        finally:
            kopf_loop.run(cluster.teardown())


@pytest.fixture
def kopf_operator(
    pytestconfig: pytest.Config, kopf_loop: TestLoop, kopf_cluster: KopfCluster
) -> Iterator[KopfOperator]:
    """An operator under test (not started): ``await kopf_operator.start(paths=[...])``; stopped after the test.

    It runs in the test's loop against ``kopf_cluster``; its leftover tasks or threads fail the test.
    """
    from .operator import KopfOperator

    operator = KopfOperator(kopf_cluster, reuse_threads=settings_of(pytestconfig).reuse_threads)
    operator.test_loop = kopf_loop.loop  # start() in another loop is a clear error, not a hang
    yield operator
    if isinstance(kopf_cluster, RealKopfCluster) and operator.running:
        # The objects of the test's CRDs go while the operator runs: its deletion handlers release them.
        with contextlib.suppress(Exception):  # what is left is removed by kopf_cluster's teardown anyway
            kopf_loop.run(release_objects(kopf_cluster))
    kopf_loop.run(operator.stop())


def _clients_dir(factory: pytest.TempPathFactory) -> pathlib.Path:
    """The session's directory for the tests' kubeconfigs (one file per test's cluster)."""
    path = factory.getbasetemp() / "kopf-clients"
    path.mkdir(exist_ok=True)
    return path


def controller_settings(request: pytest.FixtureRequest) -> ControllerSettings:
    """The built-in controllers of the test's simulated cluster: the ini's selection, then the marker's."""
    try:
        return controller_settings_of(request.node)
    except (ValueError, TypeError) as exc:
        pytest.fail(f"Bad kopf_controllers selection: {exc}", pytrace=False)


def controller_settings_of(node: pytest.Item) -> ControllerSettings:
    """The built-in controllers for a test: the ini's selection, then its marker's (a bad one: ValueError)."""
    enabled = parse_selection(str(node.config.getini("kopf_controllers") or "all"))
    marker = node.get_closest_marker("kopf_controllers")
    if marker is None:
        return ControllerSettings(enabled=enabled)
    if len(marker.args) == 1 and isinstance(marker.args[0], bool):
        enabled = parse_selection(marker.args[0])
    elif marker.args:
        enabled = parse_selection([word for arg in marker.args for word in str(arg).split(",")])
    try:
        return ControllerSettings(enabled=enabled, **marker.kwargs)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


#: The tests being run now (the innermost last): check_operator's worlds take their ini options and markers.
_running: list[pytest.Item] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.remove(item)


def running_test_controllers() -> ControllerSettings | None:
    """The built-in controllers that the test being run asks for (``kopf_controllers``), or None outside tests.

    The clusters that the operator checks make by themselves (their worlds) follow the same ini option and
    marker as the ``kopf_cluster`` fixture's.
    """
    if not _running:
        return None
    try:
        return controller_settings_of(_running[-1])
    except ValueError as exc:
        raise ValueError(f"Bad kopf_controllers selection: {exc}") from None


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.-")[:limit] or "test"


def _namespace_name(test_name: str) -> str:
    """A unique, valid namespace name (an RFC 1123 label) that tells which test made it."""
    suffix = secrets.token_hex(3)
    body = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[: 63 - len("kopf--") - len(suffix)]
    return f"kopf-{body.strip('-') or 'test'}-{suffix}"
