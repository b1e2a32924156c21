"""Loading an operator's files and modules into a fresh registry, afresh at every start, as a new process would.

Every start loads the handlers into a fresh :class:`kopf.OperatorRegistry` (made the default registry only
while the files & modules are being imported); files are loaded under a unique module name each time, so
the same file can be loaded by many tests (and by restarts), with their directories on ``sys.path`` and
their sibling modules imported afresh (:mod:`pytest_kopf._ownmodules`), as ``kopf run`` does.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import io
import itertools
import os
import sys
import traceback
import types
from collections.abc import Sequence
from typing import Any

import kopf

from ._clocks import virtualize_modules
from ._ownmodules import OwnModules
from .errors import KopfOperatorError

__all__ = ["OperatorFileLoader", "OperatorFiles", "one_line", "traceback_text"]

_counter = itertools.count(1)

_compiled: dict[tuple[str, bytes], types.CodeType] = {}


class OperatorFileLoader(importlib.machinery.SourceFileLoader):
    """Compiles an operator's file once per content: a test suite loads the same file in every test."""

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> types.CodeType:  # type: ignore[override]
        key = (str(path), bytes(data))
        code = _compiled.get(key)
        if code is None:
            code = _compiled[key] = super().source_to_code(data, path, _optimize=_optimize)
        return code


class OperatorFiles:
    """The files & modules of one run of an operator: loaded at its start, set aside when it ends."""

    def __init__(self) -> None:
        #: The modules loaded by the last load, by the path or name they were given as.
        self.modules: dict[str, types.ModuleType] = {}
        self._names: list[str] = []
        self._own: OwnModules | None = None  # the sibling modules of the files, and their directories

    def load(self, paths: Sequence[str | os.PathLike[str]], modules: Sequence[str]) -> kopf.OperatorRegistry:
        """Import the files & modules into a fresh registry (the default one only meanwhile).

        The files' sibling modules are imported afresh too, with the files' directories first on ``sys.path``
        while the operator runs (:class:`~pytest_kopf._ownmodules.OwnModules`), as ``kopf run`` would in a new
        process.
        """
        registry = kopf.OperatorRegistry()
        self.modules = {}
        if self._own is not None:  # a run that has not been cleaned up (e.g. a failed start)
            self._own.exit()
        self._own = OwnModules(os.fspath(path) for path in paths)
        self._own.enter()
        previous = kopf.get_default_registry()
        kopf.set_default_registry(registry)
        known = set(sys.modules)
        try:
            for path in paths:
                self._load_path(os.fspath(path))
            for name in modules:
                self._load_module(name)
        except BaseException:
            self._own.loaded_now()
            self._own.exit()
            self._own = None
            raise
        finally:
            kopf.set_default_registry(previous)
            virtualize_modules(sys.modules[name] for name in set(sys.modules) - known)  # datetime.now() & co.
        self._own.loaded_now()
        return registry

    def unload(self) -> None:
        """Forget the files' modules, set their sibling modules aside (the last loaded stay in :attr:`modules`)."""
        for name in self._names:
            sys.modules.pop(name, None)
        self._names.clear()
        if self._own is not None:
            self._own.exit()
            self._own = None

    def _load_path(self, path: str) -> None:
        if not os.path.isfile(path):
            raise KopfOperatorError(
                f"Cannot load the operator from {path!r}: no such file "
                f"(relative paths are relative to {os.getcwd()!r})."
            )
        stem = "".join(char if char.isalnum() else "_" for char in os.path.splitext(os.path.basename(path))[0])
        name = f"__kopf_test_{next(_counter)}__{stem}"
        spec = importlib.util.spec_from_file_location(
            name, os.path.abspath(path), loader=OperatorFileLoader(name, os.path.abspath(path))
        )
        if spec is None or spec.loader is None:
            raise KopfOperatorError(f"Cannot load the operator from {path!r}: not an importable Python file.")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        self._names.append(name)
        self.modules[path] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            raise KopfOperatorError(
                f"Cannot load the operator from {path!r}: the file has failed to import "
                f"with {one_line(exc)}\n{traceback_text(exc)}"
            ) from exc

    def _load_module(self, name: str) -> None:
        """Import the module (and its package's submodules) afresh; the modules imported before are kept."""
        cached = {key: module for key, module in sys.modules.items() if key == name or key.startswith(name + ".")}
        for key in cached:
            del sys.modules[key]
        added_path = os.getcwd() not in sys.path
        if added_path:
            sys.path.insert(0, os.getcwd())
        known = set(sys.modules)
        try:
            self.modules[name] = importlib.import_module(name)
            virtualize_modules(sys.modules[key] for key in set(sys.modules) - known)  # datetime.now() & co.
        except BaseException as exc:
            raise KopfOperatorError(
                f"Cannot load the operator's module {name!r}: it has failed to import "
                f"with {one_line(exc)}\n{traceback_text(exc)}"
            ) from exc
        finally:
            if added_path:
                with contextlib.suppress(ValueError):
                    sys.path.remove(os.getcwd())
            for key in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
                del sys.modules[key]
            sys.modules.update(cached)


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def traceback_text(exc: BaseException) -> str:
    buffer = io.StringIO()
    traceback.print_exception(exc, file=buffer)
    return buffer.getvalue().rstrip()
