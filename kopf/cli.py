"""
The command-line interface: ``kopf run``, ``kopf freeze``, ``kopf resume``.

``kopf run`` imports the operator's code (files and/or ``-m`` modules), which registers
the handlers with the decorators, and runs the operator until it is stopped (SIGINT,
SIGTERM) or fails. With ``--sim``, the operator runs against an embedded simulated
cluster (``kopf_sim``) served on loopback, with the given manifests loaded into it,
so that ``kubectl --kubeconfig <printed path>`` can drive it.

This module is a part of the framework's public interface.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import gc
import importlib
import importlib.util
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import loggers
from kopf._cogs.structs.credentials import ConnectionInfo, Vault
from kopf._core.engines import peering, probing
from kopf._core.intents import registries
from kopf._core.intents.logins import officialclient
from kopf._core.reactor import running

Flag = running.Flag

#: The priority of the operators in the development mode (``--dev``).
DEV_PRIORITY = 666
#: How many more container objects than freed ones trigger a collection of the youngest generation in ``kopf run``.
GC_YOUNG_THRESHOLD = 10_000
#: The size of a block that ``kopf run`` frees at its start: above the 256 KiB that asyncio reads a socket into.
MALLOC_MMAP_FLOOR = 512 * 1024
#: Seconds that ``--sim --replay`` waits for the operator to watch the log's resources before it replays anyway.
REPLAY_WATCH_WAIT = 30


@dataclasses.dataclass()
class CLIControls:
    """KopfRunner controls, which are impossible to pass via CLI."""

    ready_flag: Flag | None = None
    stop_flag: Flag | None = None
    vault: Vault | None = None
    registry: registries.OperatorRegistry | None = None
    settings: OperatorSettings | None = None
    loop: asyncio.AbstractEventLoop | None = None


class LogFormatParamType(click.Choice):  # type: ignore[type-arg]
    """The log formats by their lower-cased names: ``plain``, ``full``, ``json``."""

    def __init__(self) -> None:
        super().__init__(choices=[fmt.name.lower() for fmt in loggers.LogFormat])

    def convert(self, value: Any, param: Any, ctx: Any) -> loggers.LogFormat:
        if isinstance(value, loggers.LogFormat):
            return value
        name: str = super().convert(value, param, ctx)
        return loggers.LogFormat[name.upper()]


def logging_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator to configure logging in all commands the same way."""

    @click.option("-v", "--verbose", is_flag=True, help="Show what the framework is doing (not the low-level).")
    @click.option("-d", "--debug", is_flag=True, help="Extremely verbose: also asyncio, aiohttp, the API traffic.")
    @click.option("-q", "--quiet", is_flag=True, help="Only the warnings and errors.")
    @click.option(
        "--log-format",
        type=LogFormatParamType(),
        default="full",
        show_default=True,
        help="The format of the log lines.",
    )
    @click.option(
        "--log-refkey", type=str, default=None, help="The top-level key of the object's reference in the JSON logs."
    )
    @click.option(
        "--log-prefix/--no-log-prefix",
        default=None,
        help="Whether to prefix the object-related messages with the object's name.",
    )
    @functools.wraps(fn)
    def wrapper(
        verbose: bool,
        quiet: bool,
        debug: bool,
        log_format: loggers.LogFormat,
        log_prefix: bool | None,
        log_refkey: str | None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        loggers.configure(
            debug=debug,
            verbose=verbose,
            quiet=quiet,
            log_format=log_format,
            log_refkey=log_refkey,
            log_prefix=log_prefix,
        )
        return fn(*args, **kwargs)

    return wrapper


@click.group(name="kopf", context_settings=dict(auto_envvar_prefix="KOPF"))
@click.version_option(prog_name="kopf")
def main() -> None:
    """Kubernetes Operator Pythonic Framework."""


def _scope_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "-A",
        "--all-namespaces",
        "clusterwide",
        is_flag=True,
        help="Serve the whole cluster (the cluster-wide API endpoints).",
    )(fn)
    fn = click.option(
        "-n",
        "--namespace",
        "namespaces",
        multiple=True,
        help="Serve this namespace, or the namespaces matching the pattern (repeatable).",
    )(fn)
    return fn


def _point_client_libraries_to_the_sim() -> None:
    """
    The handlers' own clients reach the embedded cluster too, as they would after a login.

    ``pykube.KubeConfig.from_env()`` & ``kubernetes.config.load_kube_config()`` read ``$KUBECONFIG`` (set before
    the operator's files are imported: the official clients take it as their default path at their import);
    the official client's default configuration is set as by :func:`kopf.login_via_client`.
    """
    if officialclient.has_client():
        officialclient.login_via_client(logger=logging.getLogger(__name__))


def _check_liveness(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A bad ``--liveness`` URL is a usage error with a clear message, not a traceback after the startup."""
    if value:
        try:
            probing.parse_endpoint(value)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return value


@main.command()
@logging_options
@_scope_options
@click.option("--standalone", is_flag=True, default=False, help="Disable the peering: run as the only instance.")
@click.option(
    "--dev", "dev", is_flag=True, default=False, help=f"The development mode: implies --priority={DEV_PRIORITY}."
)
@click.option(
    "-p", "--priority", "priority", type=int, default=None, help="The priority of this operator in the peering."
)
@click.option(
    "-P",
    "--peering",
    "peering_name",
    type=str,
    default=None,
    envvar="KOPF_RUN_PEERING",
    help="The name of the peering object to use (mandatory then).",
)
@click.option(
    "-L",
    "--liveness",
    "liveness_endpoint",
    type=str,
    default=None,
    callback=_check_liveness,
    help="The URL of the liveness endpoint to serve, e.g. http://0.0.0.0:8080/healthz.",
)
@click.option("-m", "--module", "modules", multiple=True, help="Import this module (repeatable).")
@click.option(
    "--sim",
    "sim_manifests",
    multiple=True,
    is_flag=False,
    flag_value="",
    metavar="[MANIFEST]",
    help="Run against an embedded simulated cluster with this manifest loaded (repeatable).",
)
@click.option(
    "--replay",
    "replay_log",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="With --sim: replay this watch-event log into the simulated cluster once the operator is ready.",
)
@click.option(
    "--replay-speed",
    "replay_speed",
    type=str,
    default="1",
    show_default=True,
    metavar="X|max",
    help="The pace of --replay: X times the recorded one, or 'max' (each change once the cluster is quiet).",
)
@click.argument("paths", nargs=-1)
@click.make_pass_decorator(CLIControls, ensure=True)
def run(
    __controls: CLIControls,
    paths: Sequence[str],
    modules: Sequence[str],
    peering_name: str | None,
    priority: int | None,
    dev: bool,
    standalone: bool,
    namespaces: Sequence[str],
    clusterwide: bool,
    liveness_endpoint: str | None,
    sim_manifests: Sequence[str],
    replay_log: str | None,
    replay_speed: str,
) -> None:
    """Start an operator process and handle all the requests."""
    if priority is None and dev:
        priority = DEV_PRIORITY
    sim_enabled = bool(sim_manifests)
    manifests = [path for path in sim_manifests if path and not path.endswith(".py")]
    paths = [*(path for path in sim_manifests if path.endswith(".py")), *paths]

    if os.environ.get("KOPF_RUN_NAMESPACE"):  # for the deployments: namespaces via the env
        namespaces = [*namespaces, *os.environ["KOPF_RUN_NAMESPACE"].split()]
    if clusterwide and namespaces:  # worded as in the published framework
        raise click.UsageError("Either --namespace or --all-namespaces can be used, not both.")
    if __controls.registry is not None:
        registries.set_default_registry(__controls.registry)

    vault = __controls.vault
    ready_flag = __controls.ready_flag
    sim: EmbeddedSim | None = None
    previous_kubeconfig = os.environ.get("KUBECONFIG")
    if replay_log is not None and not sim_enabled:
        raise click.UsageError("--replay needs --sim: a log is replayed into a simulated cluster.")
    if sim_enabled:  # before the operator's files: the client libraries they import read $KUBECONFIG at import
        sim = EmbeddedSim(manifests, replay=replay_log, speed=_replay_speed(replay_speed))
        sim.start()
        assert sim.url is not None and sim.kubeconfig is not None
        click.echo(f"Simulated cluster: {sim.url}")
        click.echo(f"Kubeconfig: {sim.kubeconfig}")
        vault = Vault({"kopf-sim": ConnectionInfo(server=sim.url, default_namespace="default")})
        os.environ["KUBECONFIG"] = sim.kubeconfig
        if not namespaces:
            clusterwide = True
    try:
        preload(paths=paths, modules=modules)
        if __controls == CLIControls() and threading.current_thread() is threading.main_thread():
            _tune_gc()  # the process's own command line (not KopfRunner's in-process runs in the tests)
            _tune_malloc()
        if sim is not None:
            _point_client_libraries_to_the_sim()
            if replay_log is not None:
                ready_flag = ready_flag if ready_flag is not None else threading.Event()
                sim.replay_when_ready(ready_flag)
        running.run(
            loop=__controls.loop if __controls.loop is not None else _uvloop_if_installed(),
            registry=__controls.registry,
            settings=__controls.settings,
            stop_flag=__controls.stop_flag,
            ready_flag=ready_flag,
            vault=vault,
            standalone=standalone or None,
            namespaces=namespaces,
            clusterwide=clusterwide,
            priority=priority,
            peering_name=peering_name,
            liveness_endpoint=liveness_endpoint,
        )
    finally:
        if sim is not None:
            sim.stop()
            if previous_kubeconfig is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = previous_kubeconfig


@main.command()
@logging_options
@_scope_options
@click.option("-i", "--id", "identity", type=str, default=None, help="The identity of the freeze (user@host).")
@click.option("-m", "--message", type=str, default=None, help="Why the operators are frozen.")
@click.option("-t", "--lifetime", type=int, required=True, help="For how long (seconds) to freeze the operators.")
@click.option(
    "-P",
    "--peering",
    "peering_name",
    type=str,
    default="default",
    envvar="KOPF_FREEZE_PEERING",
    show_default=True,
    help="The name of the peering object.",
)
@click.option(
    "--dev", "dev", is_flag=True, default=False, help=f"The development mode: implies --priority={DEV_PRIORITY}."
)
@click.option(
    "-p",
    "--priority",
    type=int,
    default=None,
    help="The priority of the freeze: only the operators with lower priorities are frozen [default: 100].",
)
@click.make_pass_decorator(CLIControls, ensure=True)
def freeze(
    __controls: CLIControls,
    identity: str | None,
    message: str | None,
    lifetime: int,
    namespaces: Sequence[str],
    clusterwide: bool,
    peering_name: str,
    dev: bool,
    priority: int | None,
) -> None:
    """Pause the resource handling in the operators (of lower priorities) for some time."""
    priority = priority if priority is not None else DEV_PRIORITY if dev else 100
    settings = __controls.settings if __controls.settings is not None else OperatorSettings()
    command = peering.freeze(
        settings=settings,
        namespaces=namespaces,
        clusterwide=clusterwide or not namespaces,
        identity=identity or peering.detect_own_id(manual=True),
        priority=priority,
        lifetime=lifetime,
        message=message,
        peering_name=peering_name,
        vault=__controls.vault,
    )
    _run_command(__controls, command, settings=settings, namespaces=namespaces, clusterwide=clusterwide)


@main.command()
@logging_options
@_scope_options
@click.option("-i", "--id", "identity", type=str, default=None, help="The identity of the freeze (user@host).")
@click.option(
    "-P",
    "--peering",
    "peering_name",
    type=str,
    default="default",
    envvar="KOPF_RESUME_PEERING",
    show_default=True,
    help="The name of the peering object.",
)
@click.make_pass_decorator(CLIControls, ensure=True)
def resume(
    __controls: CLIControls,
    identity: str | None,
    namespaces: Sequence[str],
    clusterwide: bool,
    peering_name: str,
) -> None:
    """Resume the resource handling in the operators frozen by ``kopf freeze``."""
    settings = __controls.settings if __controls.settings is not None else OperatorSettings()
    command = peering.resume(
        settings=settings,
        namespaces=namespaces,
        clusterwide=clusterwide or not namespaces,
        identity=identity or peering.detect_own_id(manual=True),
        peering_name=peering_name,
        vault=__controls.vault,
    )
    _run_command(__controls, command, settings=settings, namespaces=namespaces, clusterwide=clusterwide)


def _run_command(
    controls: CLIControls,
    command: Any,
    *,
    settings: OperatorSettings,
    namespaces: Sequence[str],
    clusterwide: bool,
) -> None:
    running.run(
        loop=controls.loop,
        registry=controls.registry if controls.registry is not None else registries.OperatorRegistry(),
        settings=settings,
        stop_flag=controls.stop_flag,
        ready_flag=controls.ready_flag,
        vault=controls.vault,
        standalone=True,
        namespaces=namespaces,
        clusterwide=clusterwide or not namespaces,
        _command=command,
    )


def preload(*, paths: Iterable[str], modules: Iterable[str]) -> None:
    """
    Import the operator's code: the files by their paths, the modules by their names (as ``python -m``).

    A file's directory goes first on the import path before the file runs, as ``python path/to/file.py``
    does, so that the file imports its sibling modules (``from helpers import x``) wherever it is run from.
    """
    for idx, path in enumerate(paths):
        if not os.path.isfile(path):
            raise click.BadParameter(f"No such file: {path}", param_hint="PATHS")
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in sys.path:
            sys.path.insert(0, directory)
        name = f"__kopf_script_{idx}__{os.path.splitext(os.path.basename(path))[0]}"
        spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
        if spec is None or spec.loader is None:
            raise click.BadParameter(f"Cannot import the file: {path}", param_hint="PATHS")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    modules = list(modules)
    if modules and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in modules:
        importlib.import_module(name)


def _tune_gc() -> None:
    """
    Spare the operator's process most of the garbage collector's work (the process is ours in ``kopf run``).

    Each object in flight keeps some dozens of container objects alive (its body, tasks, HTTP exchanges), and
    every collection of the youngest generation traverses them all: with 1,000 objects in flight, the
    interpreter's default (every 700 allocations) spends a quarter of the operator's CPU in the collector.
    Collected ten times less often, the young objects are mostly gone by then; the objects of the imports
    are frozen (never traversed again; still freed by reference counting). Thresholds that the operator's
    code has set already stay as they are.
    """
    thresholds = gc.get_threshold()
    if thresholds[0] == 700:  # the interpreter's default: nobody has tuned the collector
        gc.freeze()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])


def _tune_malloc() -> None:
    """
    Keep glibc's malloc from mapping & unmapping memory on every read of a socket (the process is ours).

    asyncio reads each socket into a fresh 256 KiB buffer, then shrinks it to what has arrived. glibc's
    malloc serves the blocks above its threshold (128 KiB initially) with ``mmap()``, so every read of a
    response or a watch-event cost three system calls (map, shrink, unmap): ~14 us, ~3 reads per object
    handled. The threshold rises by itself to the size of a larger mapped block once that is freed
    (see mallopt(3), "dynamic mmap threshold"): one such block freed now, and the reads' buffers come from
    the heap. A threshold set explicitly (``MALLOC_MMAP_THRESHOLD_``) stays; other allocators ignore this.
    """
    block = bytes(MALLOC_MMAP_FLOOR)  # zeroed by calloc(): fresh mapped pages, never touched
    del block


def _uvloop_if_installed() -> asyncio.AbstractEventLoop | None:
    """A new uvloop loop if uvloop is installed (only for the CLI), else None (the default loop)."""
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return None
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class EmbeddedSim:
    """
    A simulated cluster served on 127.0.0.1 (a random port) in a thread of its own, with a kubeconfig.

    ``kopf_sim`` is imported only here, lazily: the framework itself knows nothing of it.
    """

    def __init__(self, manifests: Sequence[str], *, replay: str | None = None, speed: float | None = 1.0) -> None:
        self.manifests = list(manifests)
        self.replay_path = replay
        self.speed = speed
        self._replay: Any = None  # kopf_sim.recording.replaying.Replay, once checked against the cluster
        self.url: str | None = None
        self.kubeconfig: str | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, name="kopf-sim", daemon=True)

    def start(self) -> None:
        from kopf_sim.kube.errors import ApiError
        from kopf_sim.manifests import ManifestError, read_manifests
        from kopf_sim.recording.replaying import LogError
        from kopf_sim.store.cluster import Cluster

        self._cluster = Cluster()
        try:
            self._cluster.apply_manifests(read_manifests(self.manifests))
        except ManifestError as e:
            raise click.ClickException(str(e)) from None
        except ApiError as e:
            raise click.ClickException(f"Cannot load the manifests: {e.message}") from None
        handle, self.kubeconfig = tempfile.mkstemp(prefix="kopf-sim-", suffix=".kubeconfig")
        os.close(handle)
        self._thread.start()
        self._ready.wait()
        if isinstance(self._error, LogError):
            raise click.ClickException(str(self._error))
        if self._error is not None:
            raise click.ClickException(f"Cannot serve the simulated cluster: {self._error}")

    def replay_when_ready(self, ready_flag: Flag) -> None:
        """Replay the log in the simulator's thread once the operator is ready (the flag that it raises)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.create_task, self._replay_after(ready_flag))

    async def _replay_after(self, ready_flag: Flag) -> None:
        from kopf_sim.recording.replaying import ReplayError

        if isinstance(ready_flag, threading.Event):
            await asyncio.get_running_loop().run_in_executor(None, ready_flag.wait)
        elif isinstance(ready_flag, concurrent.futures.Future):
            await asyncio.wrap_future(ready_flag)
        # Ready is not yet watching: the first change must not come before the operator can see it.
        watched = {(step.resource.group, step.resource.plural) for step in self._replay.steps}
        for _ in range(REPLAY_WATCH_WAIT * 10):
            if not watched or any(self._cluster.watched(key) for key in watched):
                break
            await asyncio.sleep(0.1)
        click.echo(f"Replaying {self.replay_path}: {self._replay.summary()}.")
        try:
            await self._replay.run(speed=self.speed)
        except ReplayError as e:
            click.echo(f"Error: {e}", err=True)
        else:
            click.echo(f"Replayed {len(self._replay)} changes of {self.replay_path}.")

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(timeout=10)
        if self.kubeconfig is not None and os.path.exists(self.kubeconfig):
            os.unlink(self.kubeconfig)

    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from kopf_sim.controllers import ControllerManager
        from kopf_sim.http.app import build_app
        from kopf_sim.transports.serving import ServedApp

        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            app = build_app(self._cluster)
            if self.replay_path is not None:  # checked before anything is served: a bad log is an error at once
                from kopf_sim.recording.apiclient import app_api
                from kopf_sim.recording.replaying import prepare

                self._replay = await prepare(self.replay_path, app_api(app, user_agent="kopf-sim-replay"))
            controllers = ControllerManager(self._cluster)  # workloads come alive
            served = ServedApp(app, host="127.0.0.1", port=0)
            await served.start()
            controllers.start()
        except BaseException as e:
            self._error = e
            self._ready.set()
            return
        try:
            self.url = served.url
            assert self.kubeconfig is not None
            served.write_kubeconfig(self.kubeconfig)
            self._ready.set()
            await self._stopping.wait()
        finally:
            await controllers.stop()
            await served.stop()


def _replay_speed(value: str) -> float | None:
    """``--replay-speed``: a positive number, or ``max`` (None: each change once the cluster is quiet)."""
    if value.strip().lower() == "max":
        return None
    try:
        speed = float(value)
    except ValueError:
        speed = 0.0
    if not speed > 0:
        raise click.BadParameter(f"{value!r} is neither a positive number nor 'max'.", param_hint="--replay-speed")
    return speed
