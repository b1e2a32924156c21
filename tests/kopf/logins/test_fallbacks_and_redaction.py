"""The default login handlers, and the redaction of every credential obtained."""

import sys
from pathlib import Path

import pytest

from kopf._cogs.helpers import loggers
from kopf._core.intents.causes import Activity
from kopf._core.intents.logins import officialclient, pykubeclient
from kopf._core.intents.logins.fallbacks import get_fallback_login_handlers
from kopf._core.intents.logins.kubeconfiglogin import login_with_kubeconfig

from .helpers import CERT_PEM, KEY_PEM, b64, write_kubeconfig

# -- the default (fallback) login handlers --


@pytest.mark.parametrize(
    ("pykube", "client", "expected"),
    [
        (True, True, ["login_via_pykube", "login_via_client"]),
        (True, False, ["login_via_pykube"]),
        (False, True, ["login_via_client"]),
        (False, False, ["login_with_service_account_or_kubeconfig"]),
    ],
)
def test_fallback_handlers(
    monkeypatch: pytest.MonkeyPatch,
    pykube: bool,
    client: bool,
    expected: list[str],
) -> None:
    monkeypatch.setattr(pykubeclient, "has_pykube", lambda: pykube)
    monkeypatch.setattr(officialclient, "has_client", lambda: client)
    handlers = get_fallback_login_handlers()
    assert [handler.id for handler in handlers] == expected
    assert all(handler.activity == Activity.AUTHENTICATION for handler in handlers)
    assert all(handler.retries is None and handler.timeout is None for handler in handlers)
    assert [handler.fn.__name__ for handler in handlers] == expected


def test_library_detection_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "pykube", raising=False)
    assert officialclient.has_client() is True  # installed in the test environment
    assert pykubeclient.has_pykube() is True  # installed in the test environment (the compatibility harness)
    assert "pykube" not in sys.modules


# -- redaction of the obtained credentials --


def test_obtained_secrets_are_registered_for_redaction(kubeconfig_path: Path) -> None:
    write_kubeconfig(
        kubeconfig_path,
        user={
            "token": "registered-token-1",
            "password": "registered-pass",
            "username": "someone",
            "client-key-data": b64(KEY_PEM),
            "client-certificate-data": b64(CERT_PEM),
        },
    )
    info = login_with_kubeconfig()
    assert info is not None
    text = loggers.redact(f"token registered-token-1, pwd registered-pass; key {KEY_PEM!r}; {b64(KEY_PEM)}")
    assert "registered-token-1" not in text
    assert "registered-pass" not in text
    assert "a2V5IGRhdGE=" not in text
    assert b64(KEY_PEM) not in text
    assert "someone" in loggers.redact("user someone")  # usernames are not secrets
