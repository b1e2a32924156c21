"""The published Kopf in its own venv (installed once per machine, then reused) for the compatibility checks."""
from __future__ import annotations

import pytest

from tests.compat import peer


@pytest.fixture(scope='session')
def peer_env() -> peer.PeerEnv:
    return peer.ensure_peer()
