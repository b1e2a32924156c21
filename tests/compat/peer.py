"""
The published Kopf in a throwaway virtual environment of its own: a black box to compare against.

Our distribution is also named ``kopf``, so the published one can never share our venv: it lives in
a venv of its own under a cache directory (``$KOPF_COMPAT_CACHE``, else ``~/.cache/kopf-compat``),
created once and reused while it works. Nothing here reads the published package's files: it is only
run (``kopf run``) and introspected (``dir()``, ``inspect.signature()``) in subprocesses.

Reusable as such: the differential harness (``tests/compat``) and the side-by-side benchmarks
both take a :class:`PeerEnv` from :func:`ensure_peer`.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import pathlib
import subprocess
import sys
import venv
from collections.abc import Sequence
from typing import Any

#: The published version that this project is a drop-in for.
PEER_VERSION = "1.45.2"

#: What the harness's operators import besides kopf (the same libraries are in our venv).
PEER_EXTRAS: tuple[str, ...] = ("kubernetes", "pykube-ng")

INTROSPECT = pathlib.Path(__file__).with_name("introspect.py")


class PeerUnavailable(RuntimeError):
    """The peer venv cannot be made here (e.g. no package index reachable)."""


@dataclasses.dataclass(frozen=True)
class PeerEnv:
    """A venv with the published Kopf: its interpreter and its ``kopf`` command."""

    root: pathlib.Path
    version: str

    @property
    def python(self) -> pathlib.Path:
        return self.root / "bin" / "python"

    @property
    def kopf(self) -> pathlib.Path:
        return self.root / "bin" / "kopf"

    def installed_version(self) -> str | None:
        """The version of ``kopf`` in this venv, or ``None`` if it is not (properly) installed."""
        if not self.python.exists():
            return None
        probe = "import importlib.metadata as m; print(m.version('kopf'))"
        result = subprocess.run(
            [str(self.python), "-I", "-c", probe], capture_output=True, text=True, timeout=60, cwd=str(self.root)
        )  # isolated: not our kopf from the current directory
        return result.stdout.strip() if result.returncode == 0 else None


def cache_dir() -> pathlib.Path:
    configured = os.environ.get("KOPF_COMPAT_CACHE", "").strip()
    return pathlib.Path(configured) if configured else pathlib.Path.home() / ".cache" / "kopf-compat"


def ensure_peer(
    version: str = PEER_VERSION,
    *,
    extras: Sequence[str] = PEER_EXTRAS,
    root: pathlib.Path | None = None,
) -> PeerEnv:
    """
    The venv with ``kopf==version`` (and ``extras``), created on first use and reused afterwards.

    Several processes (e.g. pytest-xdist workers) may ask at once: a lock file serialises them,
    so the venv is made once. A broken or half-made venv is made anew.
    """
    root = root if root is not None else cache_dir() / f"peer-{version}"
    env = PeerEnv(root=root, version=version)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / ".kopf-compat-ready"
        if marker.exists() and env.installed_version() == version:
            return env
        venv.EnvBuilder(clear=True, with_pip=True).create(root)
        command = [
            str(env.python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            f"kopf=={version}",
            *extras,
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if result.returncode != 0 or env.installed_version() != version:
            raise PeerUnavailable(f"Cannot install kopf=={version} into {root}:\n{result.stderr[-2000:]}")
        marker.write_text(version)
    return env


def introspect(python: str | os.PathLike[str]) -> dict[str, Any]:
    """The public API (names, kinds, signatures) of the ``kopf`` importable by that interpreter."""
    result = subprocess.run(
        [os.fspath(python), "-I", str(INTROSPECT)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(INTROSPECT.parent),
    )
    if result.returncode != 0:
        raise RuntimeError(f"Introspection failed with {python}:\n{result.stderr}")
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def introspect_ours() -> dict[str, Any]:
    """The same listing for our kopf, taken the same way (a subprocess of our venv's interpreter)."""
    return introspect(sys.executable)
