"""``kopf-sim``: serve a simulated cluster to kubectl and any other Kubernetes client."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import secrets
import signal
import sys
import tempfile
from collections.abc import Sequence
from typing import IO, Any

import click

from kopf_sim.admission.dispatching import SynchronousWriteError
from kopf_sim.http.app import ACCESS_KEY, ServerOptions, build_app
from kopf_sim.kube import errors
from kopf_sim.rbac.access import Access
from kopf_sim.rbac.users import user_named
from kopf_sim.recording.apiclient import app_api
from kopf_sim.recording.capture import Capture, CaptureError, CaptureStats, count_of, record_until_stopped
from kopf_sim.recording.credentials import CredentialsError, connect
from kopf_sim.recording.eventlog import ChangeRecorder, LogWriter
from kopf_sim.recording.replaying import MAX_PROBLEMS_SHOWN, LogError, Replay, ReplayError, prepare, read_log
from kopf_sim.recording.show import log_page
from kopf_sim.store.cluster import HISTORY_WINDOW, Cluster
from kopf_sim.timelines.rendering import write
from kopf_sim.timing.clock import system_clock
from kopf_sim.transports.serving import ServedApp, serve_forever

from .controllers import ControllerManager, ControllerSettings, parse_selection
from .manifests import ManifestError, iter_manifests


@click.group()
def main() -> None:
    """A simulated Kubernetes API server."""


class SpeedType(click.ParamType):  # type: ignore[type-arg]
    """A replay's pace: a positive number, or ``max`` (None: as fast as the cluster quiesces)."""

    name = "X|max"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | None:
        if value is None or isinstance(value, float):
            return value
        if str(value).strip().lower() == "max":
            return None
        try:
            speed = float(value)
        except ValueError:
            self.fail(f"{value!r} is neither a number nor 'max'.", param, ctx)
        if not speed > 0:
            self.fail(f"the speed must be positive, got {value!r}.", param, ctx)
        return speed


def _add_user_token(access: Access, spec: str) -> tuple[str, str]:
    """``--rbac-user NAME[=TOKEN]``: the user's name and its (given or generated) token."""
    name, _, token = spec.partition("=")
    if not name:
        raise click.BadParameter(f"expected NAME[=TOKEN], got {spec!r}", param_hint="'--rbac-user'")
    return name, access.add_token(user_named(name), label=name, token=token or None)


def _cert_user(spec: str) -> tuple[str, str, tuple[str, ...]]:
    """``--cert-user PATH=NAME[,GROUP...]``: where to write the user's kubeconfig, the user, the groups."""
    path, _, subject = spec.rpartition("=")
    name, *groups = subject.split(",")
    if not path or not name or not all(groups):
        raise click.BadParameter(f"expected PATH=NAME[,GROUP...], got {spec!r}", param_hint="'--cert-user'")
    return path, name, tuple(groups)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=0, show_default=True, type=int, help="The port (0 picks a free one).")
@click.option(
    "--kubeconfig",
    "kubeconfig_path",
    type=click.Path(dir_okay=False),
    help="Where to write a kubeconfig for this server (default: a file in the temp dir).",
)
@click.option("--token", default=None, help="Require this bearer token ('auto' generates one).")
@click.option("--tls", is_flag=True, help="Serve HTTPS with a generated self-signed certificate.")
@click.option(
    "--rbac",
    is_flag=True,
    help="Enforce RBAC: a request that the stored Roles and bindings do not allow is 403 Forbidden "
    "(the kubeconfig's user is a cluster-admin; act as another with kubectl --as=...).",
)
@click.option(
    "--rbac-user",
    "rbac_users",
    multiple=True,
    metavar="NAME[=TOKEN]",
    help="Accept a bearer token as this user, e.g. system:serviceaccount:NS:SA (repeatable; "
    "without =TOKEN, one is generated and printed).",
)
@click.option(
    "--cert-user",
    "cert_users",
    multiple=True,
    metavar="PATH=NAME[,GROUP...]",
    help="With --tls: write a kubeconfig at PATH for this user, with a client certificate signed by the served "
    "CA (CN=NAME, O=GROUP each), which the server takes as the user's identity (repeatable).",
)
@click.option(
    "--load",
    "manifests",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Create the objects of this manifest at start (repeatable; CRDs first).",
)
@click.option(
    "--record",
    "record_path",
    type=click.Path(dir_okay=False),
    help="Append every change to this watch-event log (JSON Lines; see docs/replay.md).",
)
@click.option(
    "--replay",
    "replay_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Replay the changes of this watch-event log into the served cluster.",
)
@click.option(
    "--speed",
    type=SpeedType(),
    default=1.0,
    show_default=True,
    help="The pace of --replay: X times the recorded one, or 'max': each change once the cluster "
    "has had no writes for a second.",
)
@click.option(
    "--replay-delay",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds to wait before --replay starts (e.g. to start an operator first).",
)
@click.option(
    "--history",
    "history_window",
    default=HISTORY_WINDOW,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many changes to keep for resuming watches; older versions get 410 Expired.",
)
@click.option(
    "--controllers",
    "controllers",
    default="all",
    show_default=True,
    metavar="SELECTION",
    help="The built-in controllers to run: all, none, or a list such as 'pods,replicasets,deployments' "
    "or 'all,-cronjobs'.",
)
@click.option(
    "--nodes", default=3, show_default=True, type=click.IntRange(min=0), help="The number of simulated nodes."
)
@click.option(
    "--pod-start-delay",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds from a pod's scheduling to its containers running.",
)
@click.option(
    "--pod-ready-delay",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds from a pod's containers running to their being ready.",
)
@click.option(
    "--pod-run-time",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds that pods which run to completion (Jobs' pods) run before they succeed.",
)
@click.option(
    "--pod-stop-delay",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds that a deleted pod's containers take to stop (at most its grace period).",
)
@click.option("--verbose", "-v", is_flag=True, help="Log every request.")
def serve(
    host: str,
    port: int,
    kubeconfig_path: str | None,
    token: str | None,
    tls: bool,
    rbac: bool,
    rbac_users: tuple[str, ...],
    cert_users: tuple[str, ...],
    manifests: tuple[str, ...],
    record_path: str | None,
    replay_path: str | None,
    speed: float | None,
    replay_delay: float,
    history_window: int,
    controllers: str,
    nodes: int,
    pod_start_delay: float,
    pod_ready_delay: float,
    pod_run_time: float,
    pod_stop_delay: float,
    verbose: bool,
) -> None:
    """Serve the simulated cluster over HTTP(S) until interrupted (Ctrl+C or SIGTERM)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s")
    try:
        settings = ControllerSettings(
            enabled=parse_selection(controllers),
            nodes=nodes,
            pod_start_delay=pod_start_delay,
            pod_ready_delay=pod_ready_delay,
            pod_run_time=pod_run_time,
            pod_stop_delay=pod_stop_delay,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--controllers'") from None
    if token == "auto":
        token = secrets.token_urlsafe(24)
    certified = [_cert_user(spec) for spec in cert_users]
    if certified and not tls:
        raise click.UsageError("--cert-user needs --tls: client certificates are sent over HTTPS only.")
    cluster = Cluster(history_window=history_window)
    bootstrap_rv = cluster.rv  # what every fresh cluster has (its namespaces) is not recorded; what is loaded is
    try:
        loaded = load_manifests(cluster, manifests)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    except errors.ApiError as exc:
        raise click.ClickException(f"cannot load the manifests: {exc.message}") from None
    except SynchronousWriteError:
        raise click.ClickException(
            "cannot load the manifests: an object would be admitted by an admission webhook, which is not called "
            "while loading (load the webhook's configuration after the objects that it would admit, or create "
            "those through the API once the server serves)"
        ) from None
    app = build_app(cluster, ServerOptions(enforce_rbac=rbac))
    user_tokens = [_add_user_token(app[ACCESS_KEY], spec) for spec in rbac_users]
    replay = _prepare_replay(app, replay_path) if replay_path else None
    record_stream: IO[str] | None = None
    if record_path:
        record_stream = open(record_path, "a", encoding="utf-8")  # noqa: SIM115 - closed below
        recorder = ChangeRecorder(record_stream, clock=system_clock, source={"recorder": "kopf-sim serve --record"})
        recorder.write_present(
            (key, obj) for key, obj in cluster.everything() if int(obj["metadata"]["resourceVersion"]) > bootstrap_rv
        )
        cluster.observers.append(recorder)
    if kubeconfig_path is None:
        handle, kubeconfig_path = tempfile.mkstemp(prefix="kopf-sim-", suffix=".kubeconfig")
        os.close(handle)

    manager = ControllerManager(cluster, settings)

    async def stop_controllers(_: object) -> None:
        await manager.stop()

    app.on_shutdown.append(stop_controllers)

    def announce(served: ServedApp) -> None:
        for path, name, groups in certified:  # before the announcement: a script may use them once it is out
            served.write_kubeconfig(path, user=name, groups=groups)
        if served.ca_pem is not None:  # pods would verify the apiserver with the CA it serves with
            manager.configure(root_ca=served.ca_pem.decode())
        manager.start()  # in the serving loop, before the first request is answered
        click.echo(f"Serving a simulated Kubernetes API at {served.url}")
        click.echo(f"Kubeconfig: {kubeconfig_path}")
        click.echo(f"Try: kubectl --kubeconfig {kubeconfig_path} get all -A")
        if manifests:
            click.echo(f"Loaded {loaded} objects from {len(manifests)} manifest(s).")
        if rbac:
            click.echo("RBAC is enforced.")
        for name, user_token in user_tokens:
            click.echo(f"Token of {name}: {user_token}")
        for path, name, _ in certified:
            click.echo(f"Kubeconfig of {name} (a client certificate): {path}")
        click.echo("Press Ctrl+C to stop.", err=False)
        if replay is not None:
            _start_replay(replay, speed=speed, delay=replay_delay)

    try:
        serve_forever(app, host=host, port=port, token=token, tls=tls, kubeconfig=kubeconfig_path, on_ready=announce)
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    finally:
        if record_stream is not None:
            record_stream.close()
    click.echo("Stopped.")


def load_manifests(cluster: Cluster, paths: Sequence[str]) -> int:
    """Create the objects of the manifests, read one at a time; how many there were.

    The garbage collector rests meanwhile (what is made is kept), and what is loaded is then frozen out of its
    way: a million long-lived objects would make each of its full collections a pause of a second.
    """
    gc.disable()
    try:
        return cluster.load(iter_manifests(paths))
    finally:
        gc.enable()
        gc.freeze()


def _prepare_replay(app: Any, path: str) -> Replay:
    """Check the log against the cluster before serving: a bad log is an error, not a half-served replay."""
    try:
        return asyncio.run(prepare(path, app_api(app, user_agent="kopf-sim-replay")))
    except LogError as exc:
        raise click.ClickException(str(exc)) from None


def _start_replay(replay: Replay, *, speed: float | None, delay: float) -> None:
    """Replay in the serving loop, saying when it starts, ends, or stops at a line."""

    async def run() -> None:
        await asyncio.sleep(delay)
        click.echo(f"Replaying {replay.log.source}: {replay.summary()}.")
        try:
            await replay.run(speed=speed)
        except ReplayError as exc:
            click.echo(f"Error: {exc}", err=True)
        else:
            click.echo(f"Replayed {len(replay)} changes; still serving.")

    task = asyncio.get_running_loop().create_task(run(), name="replay")
    _background.add(task)
    task.add_done_callback(_background.discard)


_background: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks


@main.command()
@click.option(
    "--kubeconfig",
    "kubeconfig_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The kubeconfig (default: $KUBECONFIG or ~/.kube/config).",
)
@click.option("--context", default=None, help="The kubeconfig context (default: the current one).")
@click.option(
    "--resource", "-r", "resources", multiple=True, help="Record this resource, named as kubectl names it (repeatable)."
)
@click.option("--all-resources", is_flag=True, help="Record every resource that can be listed and watched.")
@click.option(
    "--namespace",
    "-n",
    "namespaces",
    multiple=True,
    help="Record only this namespace (repeatable; default: all namespaces).",
)
@click.option(
    "--output",
    "-o",
    "output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The log to write (appended to, as a new segment, if it exists).",
)
@click.option(
    "--duration",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Stop after this many seconds (default: at Ctrl+C or SIGTERM).",
)
@click.option("--include-secrets", is_flag=True, help="Keep the values of Secrets (blanked by default).")
def record(
    kubeconfig_path: str | None,
    context: str | None,
    resources: tuple[str, ...],
    all_resources: bool,
    namespaces: tuple[str, ...],
    output: str,
    duration: float | None,
    include_secrets: bool,
) -> None:
    """Record a cluster's watch events into a log: the current objects first (as ADDED), then every change."""
    try:
        connection = connect(kubeconfig_path, context, user_agent="kopf-sim-record")
    except CredentialsError as exc:
        raise click.ClickException(str(exc)) from None
    source = {
        "recorder": "kopf-sim record",
        "server": connection.server,
        "context": connection.context,
        "resources": [*sorted(resources), *(["*"] if all_resources else [])],
        "namespaces": sorted(namespaces),
    }
    terminal = sys.stderr.isatty()

    def announce(stats: CaptureStats) -> None:
        click.echo(
            f"Recording {connection.server} (context {connection.context or '-'}) into {output}: "
            f"{count_of(stats.objects, 'object')} there now; Ctrl+C to stop.",
            err=True,
        )

    def progress(stats: CaptureStats) -> None:
        if terminal:
            click.echo(f"\rRecording: {stats.line()}\033[K", nl=False, err=True)

    def warn(message: str) -> None:
        click.echo(("\r\033[K" if terminal else "") + f"Warning: {message}", err=True)

    async def main(stream: IO[str]) -> CaptureStats:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            writer = LogWriter(stream, started=system_clock(), source=source, secrets=include_secrets)
            capture = Capture(
                connection.api,
                writer,
                resources=resources,
                all_resources=all_resources,
                namespaces=namespaces,
                warn=warn,
            )
            return await record_until_stopped(
                capture, stop=stop, duration=duration, started=announce, progress=progress
            )
        finally:
            await connection.api.close()

    try:
        with open(output, "a", encoding="utf-8") as stream:
            stats = asyncio.run(main(stream))
    except (CaptureError, OSError) as exc:
        if terminal:
            click.echo("", err=True)
        raise click.ClickException(str(exc)) from None
    if terminal:
        click.echo("\r\033[K", nl=False, err=True)
    click.echo(f"Recorded {stats.line()} into {output}.", err=True)


@main.command()
@click.argument("log", type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False),
    default=None,
    help="The HTML file to write (default: the log's path with .html instead of its suffix).",
)
@click.option(
    "--resource",
    "-r",
    "resources",
    multiple=True,
    help="Show only the changes of this resource, named as kubectl names it (repeatable; default: every event).",
)
@click.option(
    "--until",
    type=click.FloatRange(min=0),
    default=None,
    help="Show only the events up to this many seconds into the log.",
)
def show(log: str, output: str | None, resources: tuple[str, ...], until: float | None) -> None:
    """Draw a watch-event log as a timeline: one self-contained HTML page (a lane per object, an item per event)."""
    try:
        page = log_page(read_log(log), resources=resources or None, until=until)
    except LogError as exc:  # its own wording is a replay's ("nothing was written")
        shown = [f"  {problem}" for problem in exc.problems[:MAX_PROBLEMS_SHOWN]]
        more = len(exc.problems) - len(shown)
        raise click.ClickException(
            "\n".join([f"Cannot show {log}:", *shown, *([f"  … and {more} more"] if more > 0 else [])])
        ) from None
    target = output if output is not None else os.path.splitext(log)[0] + ".html"
    try:
        write(page, target)
    except OSError as exc:
        raise click.ClickException(f"cannot write {target}: {exc.strerror or exc}") from None
    items = len(page.runs[0].items)
    click.echo(f"Wrote {items} event{'s' if items != 1 else ''} on {len(page.runs[0].lanes)} lanes into {target}.")
