"""Every credential that a login obtains is masked in all the logs from then on."""

from kopf._cogs.helpers import loggers
from kopf._cogs.structs.credentials import ConnectionInfo

__all__ = ["register_connection_secrets", "registered"]


def register_connection_secrets(info: ConnectionInfo | None) -> None:
    """Mask the secrets of these credentials in all the logs from now on."""
    if info is None:
        return
    for value in (info.token, info.password, info.private_key_data, info.certificate_data):
        loggers.register_secret(value)


def registered(info: ConnectionInfo | None) -> ConnectionInfo | None:
    """The same credentials, with their secrets registered for the redaction."""
    register_connection_secrets(info)
    return info
