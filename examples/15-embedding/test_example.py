"""The application starts the operator in a thread, the operator handles objects, the application stops it."""

import asyncio
import importlib.util
from pathlib import Path

import pytest

import kopf

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


def load_example() -> tuple[object, kopf.OperatorRegistry]:
    """Import the example with its handlers in a registry of their own (not in the process-wide one)."""
    registry = kopf.OperatorRegistry()
    previous = kopf.get_default_registry()
    kopf.set_default_registry(registry)
    try:
        spec = importlib.util.spec_from_file_location("embedding_example", HERE / "example.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        kopf.set_default_registry(previous)
    return module, registry


@pytest.mark.kopf_real_time  # the operator's thread has a loop and a clock of its own, real ones
async def test_operator_in_a_thread(kopf_cluster, monkeypatch):
    await kopf_cluster.apply(CRD)
    monkeypatch.setenv("KUBECONFIG", str(await kopf_cluster.kubeconfig()))  # where the operator logs in
    example, registry = load_example()
    operator = example.OperatorThread(namespaces=[kopf_cluster.namespace], registry=registry)

    await asyncio.to_thread(operator.start)  # this loop serves the simulated cluster: never block it
    assert operator.ready_flag.is_set() and operator.error is None
    await kopf_cluster.create(
        {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "embedded"}, "spec": {}}
    )
    obj = await kopf_cluster.wait_for(
        "kopfexamples", "embedded", timeout=30, condition=lambda o: "greet" in o.get("status", {})
    )
    assert obj["status"]["greet"] == {"message": "hello from the embedded operator, embedded"}

    await asyncio.to_thread(operator.stop)
    assert operator.error is None
    await kopf_cluster.delete("kopfexamples", "embedded")
    await kopf_cluster.wait_gone("kopfexamples", "embedded", timeout=30)
