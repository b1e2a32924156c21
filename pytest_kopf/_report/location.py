"""Where the reports go, and the machine's paths kept out of them.

The plugin registers a :class:`ReportTarget` for its session: the directory of ``--kopf-report DIR``
(or ``kopf-reports/`` in pytest's temporary directory) and the test running now, which names the
file. Outside of pytest, the reports go to a fresh temporary directory.

A report is a file to pass around (a CI artifact, a bug report): it holds no absolute path of the
machine but those of the files the user named (the operator's, the manifests, the logs). Any other
(a traceback's frames, a temporary kubeconfig) is shown relative to where it lies: the import path
(``kopf/_core/…``), the current directory (``./…``), the home (``~/…``), the temporary directory.
"""

from __future__ import annotations

import functools
import os
import pathlib
import re
import sys
import tempfile
from collections.abc import Callable, Iterable

__all__ = ["PathScrubber", "ReportTarget", "current_target", "register", "report_path", "unregister"]


class ReportTarget:
    """A session's reports: their directory (made when the first one is written), and the test running now."""

    def __init__(self, directory: Callable[[], pathlib.Path]) -> None:
        self._directory = directory
        self.test: str | None = None  # the node id of the test running now
        self._taken: set[pathlib.Path] = set()

    def directory(self) -> pathlib.Path:
        return self._directory()

    def path_for(self, check: str) -> pathlib.Path:
        """A new file for a report on this check in the test running now (a second one in the same test: ``-2``)."""
        directory = self.directory()
        directory.mkdir(parents=True, exist_ok=True)
        stem = f"{_slug(self.test or 'check_operator', 160)}-{_slug(check, 60)}"
        path = directory / f"{stem}.html"
        number = 1
        while path in self._taken:
            number += 1
            path = directory / f"{stem}-{number}.html"
        self._taken.add(path)
        return path


_targets: list[ReportTarget] = []


def register(target: ReportTarget) -> None:
    _targets.append(target)


def unregister(target: ReportTarget) -> None:
    if target in _targets:
        _targets.remove(target)


def current_target() -> ReportTarget:
    """The innermost session's target; outside of pytest, one of a fresh temporary directory (for the process)."""
    return _targets[-1] if _targets else _fallback()


@functools.cache
def _fallback() -> ReportTarget:
    return ReportTarget(functools.cache(lambda: pathlib.Path(tempfile.mkdtemp(prefix="kopf-reports-"))))


def report_path(check: str) -> pathlib.Path:
    return current_target().path_for(check)


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.-")[:limit] or "report"


# -- the machine's paths -----------------------------------------------------------------------------

#: An absolute POSIX path: a slash, then at least one component (names stop at spaces, quotes and such).
_PATH = re.compile(r"(?<![\w.~:/-])(/[\w.@+-]+)+/?")


class PathScrubber:
    """Rewrites the absolute paths of the machine in a text, but for the files the user named."""

    def __init__(self, named: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.named = sorted({os.path.abspath(os.fspath(path)) for path in named}, key=len, reverse=True)
        roots: list[tuple[str, str]] = [(os.path.abspath(entry), "") for entry in sys.path if entry]
        roots.append((os.getcwd(), "./"))
        roots.append((os.path.expanduser("~"), "~/"))
        roots.append((tempfile.gettempdir(), "$TMPDIR/"))
        roots.append((sys.prefix, "$PREFIX/"))
        usable = [(root.rstrip("/"), label) for root, label in roots if root not in ("", "/")]
        self.roots = sorted(usable, key=lambda pair: len(pair[0]), reverse=True)

    def __call__(self, text: str) -> str:
        return _PATH.sub(self._replace, text) if "/" in text else text

    def _replace(self, match: re.Match[str]) -> str:
        path = match.group(0)
        if not _on_this_machine(path):
            return path  # e.g. an API path (/apis/…), not a file of this machine
        for named in self.named:
            if path == named or path.startswith(named + "/") or named.startswith(path.rstrip("/") + "/"):
                return path
        for root, label in self.roots:
            if path == root or path.startswith(root + "/"):
                rest = path[len(root) :].lstrip("/")
                return f"{label}{rest}" if rest or label else "."
        return f"…/{pathlib.PurePosixPath(path).name}"


@functools.cache
def _top_level() -> frozenset[str]:
    try:
        return frozenset(os.listdir("/"))
    except OSError:
        return frozenset()


def _on_this_machine(path: str) -> bool:
    """Whether a path lies under a directory at the top of this machine's file system (/tmp, /home, /usr …)."""
    first = path.lstrip("/").split("/", 1)[0]
    return first in _top_level()
