"""
The official client's default configuration, set when (and only if) the operator imports the client.

Importing ``kubernetes`` costs about 17 MiB and a few tenths of a second, so the default login
does not import it unless the operator's code has already done so. The documented promise stays:
a handler's bare ``kubernetes.client.CoreV1Api()`` reaches the operator's cluster. For that,
an import hook waits for the first import of ``kubernetes`` and, right after the library's
own initialisation, loads its configuration (in-cluster, else the kubeconfig) as its default,
exactly as the login via the client would have done.
"""

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["configure_when_imported", "pending"]

_logger = logging.getLogger(__name__)

MODULE_NAME = "kubernetes"


class _ConfiguringLoader(importlib.abc.Loader):
    """Wraps the library's loader: the module is initialised as usual, then configured."""

    def __init__(self, loader: Any, configure: Callable[[ModuleType], None], hook: "_ImportHook") -> None:
        self._loader = loader
        self._configure = configure
        self._hook = hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create: Callable[[importlib.machinery.ModuleSpec], ModuleType | None] | None
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _uninstall(self._hook)  # only now: a mere find_spec() (e.g. "is it installed?") must not consume it
        try:
            self._configure(module)
        except Exception as e:  # a failure to configure must never break the operator's import
            _logger.warning(f"Cannot set the default configuration of the kubernetes client: {e}")

    def __getattr__(self, name: str) -> Any:  # resource readers, get_code, etc. of the real loader
        return getattr(self._loader, name)


class _ImportHook(importlib.abc.MetaPathFinder):
    """A one-shot finder: it wraps the loader of the first ``kubernetes`` import, and leaves once it loads."""

    def __init__(self, configure: Callable[[ModuleType], None]) -> None:
        self._configure = configure

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != MODULE_NAME:
            return None
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in list(sys.meta_path):  # the usual finders, without this one
            if isinstance(finder, _ImportHook):
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ConfiguringLoader(spec.loader, self._configure, self)
        return spec


_lock = threading.Lock()


def _uninstall(hook: _ImportHook) -> None:
    with _lock:
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)


def pending() -> bool:
    """Whether a default configuration waits for the library's import (e.g. for diagnostics & tests)."""
    return any(isinstance(finder, _ImportHook) for finder in sys.meta_path)


def configure_when_imported(configure: Callable[[ModuleType], None]) -> None:
    """
    Call ``configure(kubernetes)`` now if the library is imported, else right after its first import.

    Only the latest request is kept: a re-login replaces the pending one.
    """
    module = sys.modules.get(MODULE_NAME)
    if module is not None:
        configure(module)
        return
    with _lock:
        sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _ImportHook)]
        sys.meta_path.insert(0, _ImportHook(configure))
