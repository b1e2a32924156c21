"""
Fixtures for running whole operators (``kopf.operator()``, ``kopf run``): the shared simulated cluster
(tests/conftest.py) with the CRD of ``examples/crd.yaml``, and settings for one operator alone.

What they fake on top of the shared ones: nothing; peering is off (standalone), as for a single operator.
"""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

import kopf
from kopf_sim.manifests import read_manifests
from kopf_sim.store.cluster import Cluster

ROOT = pathlib.Path(__file__).parent.parent.parent.parent


@pytest.fixture
def crds() -> list[dict[str, Any]]:
    return read_manifests([ROOT / "examples" / "crd.yaml"])


@pytest.fixture
def settings(settings: kopf.OperatorSettings) -> kopf.OperatorSettings:
    settings.peering.standalone = True
    settings.batching.idle_timeout = 1.0
    return settings


def kex(cluster: Cluster) -> Any:
    return cluster.resource("kopf.dev", "v1", "kopfexamples")


def peek(cluster: Cluster, namespace: str | None, name: str) -> dict[str, Any] | None:
    return cluster.peek(kex(cluster).storage_key, namespace, name)


@pytest.fixture(autouse=True)
def _restored_logging() -> Iterator[None]:
    """The CLI configures the process-wide logging (levels, handlers): undo it, other tests rely on the defaults."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    named = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, named_level in named.items():
        logging.getLogger(name).setLevel(named_level)
