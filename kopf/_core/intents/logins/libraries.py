"""
What the piggybacking logins share: whether a client library is installed, and the login without it.

The client libraries are heavy to import (``kubernetes`` ~17 MiB, ``pykube-ng`` with ``requests``
~7 MiB, tenths of a second each): while nothing has imported a library yet, the credentials it would
find are read by the built-in readers instead, whenever those understand them fully.
"""

import importlib.util
import logging
from collections.abc import Sequence
from typing import Any

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._core.intents.logins.kubeconfiglogin import login_with_kubeconfig_context
from kopf._core.intents.logins.kubeconfigs import load_kubeconfig
from kopf._core.intents.logins.serviceaccount import login_with_service_account

__all__ = ["LoggerLike", "is_installed", "login_without_the_library"]

LoggerLike = logging.Logger | logging.LoggerAdapter[Any]


def is_installed(name: str) -> bool:
    """Whether a library is installed (it is not imported here)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def login_without_the_library(paths: Sequence[str], *, library: str, logger: LoggerLike) -> ConnectionInfo | None:
    """The credentials the library would get (its kubeconfig ``paths``) if the built-in readers understand them."""
    try:
        info = login_with_service_account()
        if info is not None:
            logger.debug(f"The credentials are the service account's ({library} is not imported).")
            return info
        config, found = load_kubeconfig(paths)
        if not found or config.needs_a_client_library():
            return None
        login = login_with_kubeconfig_context(paths)
    except LoginError:
        return None  # the library tries on its own and explains its failures in its own terms
    if login is None:
        return None
    logger.debug(f"The credentials are the kubeconfig's ({library} is not imported).")
    return login.info
