"""An operator's own modules, loaded afresh for every run of it, as a new process would: :class:`OwnModules`.

``kopf run path/to/operator.py`` puts the file's directory first on ``sys.path``, so the file imports its
sibling modules (``from helpers import api``). In one test process, many operators are loaded one after
another (a test each, a world each for the checks, a fresh one after each crash or restart): a sibling
imported once would keep what it made at its import for the rest of the process, e.g. a client of the
official library configured for the first test's cluster, gone by the next test.

So while the files load, their directories are first on ``sys.path`` (and stay there while the operator
runs, for the imports in its handlers), and the modules that those directories provide (by their top-level
names) are set aside: the operator imports its own, fresh. When the operator stops, its own modules go
and those set aside come back. Never set aside: the standard library and installed packages (a sibling
``operator.py`` does not replace the standard ``operator`` module already imported, as in a new process), and
the framework's packages.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import types
from collections.abc import Iterable

__all__ = ["OwnModules"]

#: The framework's packages: one copy per process, whatever directory an operator is in.
FRAMEWORK = frozenset({"kopf", "kopf_sim", "pytest_kopf"})


def _system_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    dirs.update(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    return tuple(os.path.join(os.path.realpath(path), "") for path in dirs)


_SYSTEM_DIRS = _system_dirs()


def _is_system(module: types.ModuleType) -> bool:
    """Built in, or from the standard library or an installed package (not a project's own code)."""
    file = getattr(module, "__file__", None)
    if not file:
        locations = getattr(getattr(module, "__spec__", None), "submodule_search_locations", None)
        if not locations:
            return True  # built in (or frozen)
        file = next(iter(locations), "")
    return os.path.realpath(file).startswith(_SYSTEM_DIRS)


def _names_in(directory: str) -> set[str]:
    """The top-level module names that ``import`` finds in a directory: ``x.py`` files and package dirs."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return set()
    names = set()
    for entry in entries:
        stem, extension = os.path.splitext(entry)
        if extension == ".py" and stem.isidentifier():
            names.add(stem)
        elif not extension and entry.isidentifier() and os.path.isdir(os.path.join(directory, entry)):
            names.add(entry)
    return names - FRAMEWORK


#: Per top-level module name provided by running operators' directories: the module of each (None: of the
#: process from before them), the latest on top. Operators stop in any order (a world and its baseline, a
#: restart in between); whatever stops, ``sys.modules`` gets the top one of the operators still running.
_layers: dict[str, list[tuple[OwnModules | None, types.ModuleType]]] = {}


class OwnModules:
    """The directories of an operator's files, and the modules it imports from there (see the module's docs)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.directories = list(dict.fromkeys(os.path.dirname(os.path.abspath(path)) for path in paths))
        self.names = set().union(*(_names_in(directory) for directory in self.directories))
        self.loaded: dict[str, types.ModuleType] = {}  # the operator's own, imported fresh
        self._aside: dict[str, types.ModuleType] = {}  # the modules of those names set aside for the loading
        self._known: set[str] = set()
        self._entered = False

    def _provided(self, name: str) -> bool:
        return name.partition(".")[0] in self.names

    def enter(self) -> None:
        """Before loading: the directories first on ``sys.path``; the modules they provide set aside."""
        self._entered = True
        for directory in reversed(self.directories):
            sys.path.insert(0, directory)  # an entry of ours: a copy of an entry there already is harmless
            invalidate = getattr(sys.path_importer_cache.get(directory), "invalidate_caches", None)
            if invalidate is not None:  # files written since it listed the directory (e.g. by a test) are found
                invalidate()
        for name in self._present():
            module = sys.modules[name]
            if not _is_system(module):
                _layers.setdefault(name, [(None, module)])  # the process's own, if no operator has one yet
                self._aside[name] = sys.modules.pop(name)
        self._known = set(sys.modules)

    def _present(self) -> list[str]:
        """The modules of the provided names imported now (a package's submodules looked for only if it is)."""
        present = [name for name in self.names if name in sys.modules]
        packages = tuple(f"{name}." for name in present if hasattr(sys.modules[name], "__path__"))
        if packages:
            present.extend(name for name in list(sys.modules) if name.startswith(packages))
        return present

    def loaded_now(self) -> None:
        """After loading: remember the operator's own modules; those set aside and not imported anew come back."""
        for name in [name for name in sys.modules if name not in self._known]:
            if self._provided(name):
                self.loaded[name] = sys.modules[name]
                _layers.setdefault(name, []).append((self, sys.modules[name]))
        for name, module in self._aside.items():
            if name not in sys.modules:
                sys.modules[name] = module
                _forget_the_process_own(name)
        self._aside.clear()

    def exit(self) -> None:
        """When the operator stops: its own modules go (the latest of the others' or those from before come back),
        and the directories leave ``sys.path``."""
        if not self._entered:
            return
        self._entered = False
        for name in self.loaded:
            layers = [layer for layer in _layers.get(name, ()) if layer[0] is not self]
            if layers:
                sys.modules[name] = layers[-1][1]
                _layers[name] = layers
                _forget_the_process_own(name)
            else:
                sys.modules.pop(name, None)
                _layers.pop(name, None)
        self.loaded.clear()
        for directory in self.directories:
            with contextlib.suppress(ValueError):
                sys.path.remove(directory)  # the first one: ours (or the same path put there since)


def _forget_the_process_own(name: str) -> None:
    """No operator has its own module of this name any more: the process's own is simply in ``sys.modules``."""
    layers = _layers.get(name)
    if layers is not None and all(owner is None for owner, _ in layers):
        del _layers[name]
