"""``kopf-sim``: serve a simulated cluster to kubectl and any other Kubernetes client."""
from __future__ import annotations

import logging
import os
import secrets
import tempfile
from typing import IO

import click

from . import errors
from .app import build_app
from .manifests import ManifestError, read_manifests
from .recording import ChangeRecorder
from .serving import ServedApp, serve_forever
from .store import HISTORY_WINDOW, Cluster


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
@click.option("--history", "history_window", default=HISTORY_WINDOW, show_default=True, type=click.IntRange(min=1),
              help="How many changes to keep for resuming watches; older versions get 410 Expired.")
@click.option("--verbose", "-v", is_flag=True, help="Log every request.")
def serve(host: str, port: int, kubeconfig_path: str | None, token: str | None, tls: bool,
          manifests: tuple[str, ...], record_path: str | None, verbose: bool, history_window: int) -> None:
    """Serve the simulated cluster over HTTP(S) until interrupted (Ctrl+C or SIGTERM)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s")
    if token == "auto":
        token = secrets.token_urlsafe(24)
    cluster = Cluster(history_window=history_window)
    try:
        documents = read_manifests(manifests)
        cluster.apply_manifests(documents)
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

    def announce(served: ServedApp) -> None:
        click.echo(f"Serving a simulated Kubernetes API at {served.url}")
        click.echo(f"Kubeconfig: {kubeconfig_path}")
        click.echo(f"Try: kubectl --kubeconfig {kubeconfig_path} get all -A")
        if documents:
            click.echo(f"Loaded {cluster.count() - 4} objects from {len(manifests)} manifest(s).")
        click.echo("Press Ctrl+C to stop.", err=False)

    try:
        serve_forever(build_app(cluster), host=host, port=port, token=token, tls=tls,
                      kubeconfig=kubeconfig_path, on_ready=announce)
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    finally:
        if record_stream is not None:
            record_stream.close()
    click.echo("Stopped.")
