"""``kopf-sim``: serve a simulated cluster to kubectl and any other Kubernetes client."""
from __future__ import annotations

import logging
import os
import secrets
import tempfile
from typing import IO

import click

from . import errors
from .app import ADMISSION_KEY, build_app
from .controllers import ControllerManager, ControllerSettings, parse_selection
from .manifests import ManifestError, read_manifests
from .recording import ChangeRecorder
from .serving import ServedApp, serve_forever
from .store import Cluster


@click.group()
def main() -> None:
    """A simulated Kubernetes API server."""


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=0, show_default=True, type=int, help="The port (0 picks a free one).")
@click.option("--kubeconfig", "kubeconfig_path", type=click.Path(dir_okay=False),
              help="Where to write a kubeconfig for this server (default: a file in the temp dir).")
@click.option("--token", default=None, help="Require this bearer token ('auto' generates one).")
@click.option("--tls", is_flag=True, help="Serve HTTPS with a generated self-signed certificate.")
@click.option("--load", "manifests", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Create the objects of this manifest at start (repeatable; CRDs first).")
@click.option("--record", "record_path", type=click.Path(dir_okay=False),
              help="Append every change as a JSON Lines watch event to this file.")
@click.option("--controllers", "controllers", default="all", show_default=True, metavar="SELECTION",
              help="The built-in controllers to run: all, none, or a list such as 'pods,replicasets,deployments' "
                   "or 'all,-cronjobs'.")
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(min=0),
              help="The number of simulated nodes.")
@click.option("--pod-start-delay", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds from a pod's scheduling to its containers running.")
@click.option("--pod-ready-delay", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds from a pod's containers running to their being ready.")
@click.option("--pod-run-time", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds that pods which run to completion (Jobs' pods) run before they succeed.")
@click.option("--pod-stop-delay", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds that a deleted pod's containers take to stop (at most its grace period).")
@click.option("--verbose", "-v", is_flag=True, help="Log every request.")
def serve(host: str, port: int, kubeconfig_path: str | None, token: str | None, tls: bool,
          manifests: tuple[str, ...], record_path: str | None, controllers: str, nodes: int,
          pod_start_delay: float, pod_ready_delay: float, pod_run_time: float, pod_stop_delay: float,
          verbose: bool) -> None:
    """Serve the simulated cluster over HTTP(S) until interrupted (Ctrl+C or SIGTERM)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s")
    try:
        settings = ControllerSettings(enabled=parse_selection(controllers), nodes=nodes,
                                      pod_start_delay=pod_start_delay, pod_ready_delay=pod_ready_delay,
                                      pod_run_time=pod_run_time, pod_stop_delay=pod_stop_delay)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--controllers'") from None
    if token == "auto":
        token = secrets.token_urlsafe(24)
    cluster = Cluster()
    try:
        documents = read_manifests(manifests)
        loaded = cluster.apply_manifests(documents)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    except errors.ApiError as exc:
        raise click.ClickException(f"cannot load the manifests: {exc.message}") from None
    record_stream: IO[str] | None = None
    if record_path:
        record_stream = open(record_path, "a", encoding="utf-8")  # noqa: SIM115 - closed below
        cluster.observers.append(ChangeRecorder(record_stream))
    if kubeconfig_path is None:
        handle, kubeconfig_path = tempfile.mkstemp(prefix="kopf-sim-", suffix=".kubeconfig")
        os.close(handle)

    app = build_app(cluster)
    manager = ControllerManager(cluster, settings, admission=app[ADMISSION_KEY])

    async def stop_controllers(_: object) -> None:
        await manager.stop()

    app.on_shutdown.append(stop_controllers)

    def announce(served: ServedApp) -> None:
        if served.ca_pem is not None:  # pods would verify the apiserver with the CA it serves with
            manager.configure(root_ca=served.ca_pem.decode())
        manager.start()  # in the serving loop, before the first request is answered
        click.echo(f"Serving a simulated Kubernetes API at {served.url}")
        click.echo(f"Kubeconfig: {kubeconfig_path}")
        click.echo(f"Try: kubectl --kubeconfig {kubeconfig_path} get all -A")
        if documents:
            click.echo(f"Loaded {len(loaded)} objects from {len(manifests)} manifest(s).")
        click.echo("Press Ctrl+C to stop.", err=False)

    try:
        serve_forever(app, host=host, port=port, token=token, tls=tls,
                      kubeconfig=kubeconfig_path, on_ready=announce)
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    finally:
        if record_stream is not None:
            record_stream.close()
    click.echo("Stopped.")
