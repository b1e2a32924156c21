"""The login handlers of an operator that declares none of its own."""

from collections.abc import Sequence
from typing import Any

from kopf._cogs.structs.credentials import ConnectionInfo
from kopf._cogs.structs.ids import HandlerId
from kopf._core.actions.errors import DEFAULT_RETRY_DELAY, ErrorsMode
from kopf._core.intents.causes import Activity
from kopf._core.intents.handlers import ActivityHandler
from kopf._core.intents.logins import officialclient, pykubeclient
from kopf._core.intents.logins.kubeconfiglogin import login_with_kubeconfig
from kopf._core.intents.logins.serviceaccount import login_with_service_account

__all__ = ["get_fallback_login_handlers", "login_with_service_account_or_kubeconfig"]


def login_with_service_account_or_kubeconfig(**kwargs: Any) -> ConnectionInfo | None:
    """The rudimentary fallback: the service account if in a cluster, else the kubeconfig."""
    return login_with_service_account(**kwargs) or login_with_kubeconfig(**kwargs)


def get_fallback_login_handlers() -> Sequence[ActivityHandler]:
    """
    The login handlers to use when the operator declares none of its own.

    All the installed client libraries are piggybacked: pykube-ng and the official
    ``kubernetes`` client, each as a separate handler, so all of their credentials
    go into the vault. If none of them is installed, the rudimentary login is used:
    the service account if in a cluster, otherwise the kubeconfig.
    The handlers have the same defaults as ``@kopf.on.login()``.
    """
    fns: list[tuple[str, Any]] = []
    if pykubeclient.has_pykube():
        fns.append(("login_via_pykube", pykubeclient.login_via_pykube))
    if officialclient.has_client():
        fns.append(("login_via_client", officialclient.login_via_client))
    if not fns:
        fns.append(("login_with_service_account_or_kubeconfig", login_with_service_account_or_kubeconfig))
    return [
        ActivityHandler(
            fn=fn,
            id=HandlerId(handler_id),
            param=None,
            activity=Activity.AUTHENTICATION,
            errors=ErrorsMode.TEMPORARY,
            timeout=None,
            retries=None,
            backoff=DEFAULT_RETRY_DELAY,
        )
        for handler_id, fn in fns
    ]
