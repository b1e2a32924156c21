"""
Helpers shared by the tests (plain functions, imported; the fixtures are in ``tests/conftest.py``).

Bodies of the test resources (``widget``, ``example``), polling for a condition in the loop's time, and an
operator with an endless update loop (``stamping_registry``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import kopf


def widget(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    """A ``Widget`` (``acme.example/v1``): the resource of the simulator's and the API clients' tests."""
    return {
        "apiVersion": "acme.example/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }


def example(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    """A ``KopfExample`` (``kopf.dev/v1``, ``examples/crd.yaml``): the resource of the operators' tests."""
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }


async def wait_for(predicate: Callable[[], Any], *, timeout: float = 60.0, step: float = 0.1) -> Any:
    """
    Poll until the predicate is truthy and return its value; fail the test after ``timeout`` seconds.

    The seconds are the running loop's: virtual ones under the virtual-time loop (looptime), so a long
    timeout costs nothing when the condition comes true, and the failure names the predicate.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(f"The condition is not met in {timeout} seconds: {predicate}")
        await asyncio.sleep(step)


def stamping_registry(resource: str) -> kopf.OperatorRegistry:
    """The bug: every run of the handler writes to its own object, which makes a new event, hence a new run."""
    import kopf  # here: most users of these helpers test the simulator alone

    registry = kopf.OperatorRegistry()

    @kopf.on.create(resource, registry=registry)
    @kopf.on.update(resource, registry=registry)
    def stamp(labels: Any, patch: kopf.Patch, **_: Any) -> None:
        patch.metadata.labels["stamp"] = str(int(labels.get("stamp", "0")) + 1)

    return registry
