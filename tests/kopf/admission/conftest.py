"""The admission tests' registry & settings, their CRD in the shared cluster, and an operator to serve."""

from __future__ import annotations

from typing import Any

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.engines.admission_errors import AdmissionError
from kopf._core.intents.registries import OperatorRegistry

from .helpers import CRD


@pytest.fixture
def registry() -> OperatorRegistry:
    return OperatorRegistry()


@pytest.fixture
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.networking.error_backoffs = []  # the denials with 5xx codes are not retried by the clients.
    return settings


@pytest.fixture
def crds() -> list[dict[str, Any]]:
    """The simulated apiserver (the shared ``cluster`` & ``server`` fixtures) serves the example resource."""
    return [CRD]


@pytest.fixture
def operator_registry() -> OperatorRegistry:
    """An operator with validating & mutating handlers, persistent & not."""
    registry = OperatorRegistry()

    @kopf.on.validate("kopfexamples", registry=registry)
    def check_field(spec: Any, warnings: list[str], **_: Any) -> None:
        if spec.get("field") == "bad":
            raise AdmissionError("The field must not be bad.", code=400)
        warnings.append("Checked by the operator.")

    @kopf.on.validate("kopfexamples", id="audit", persistent=True, operation="DELETE", registry=registry)
    def audit(**_: Any) -> None:
        pass

    @kopf.on.mutate("kopfexamples", registry=registry)
    def defaults(spec: Any, patch: kopf.Patch, **_: Any) -> None:
        if "numbers" not in spec:
            patch.spec["numbers"] = [1, 2, 3]

    return registry
