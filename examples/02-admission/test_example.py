"""The admission webhooks: a bad object is rejected, a missing duration is defaulted."""

from pathlib import Path

import pytest

from pytest_kopf.errors import KopfApiError

HERE = Path(__file__).parent
CRD = HERE.parent / "crd.yaml"


def has_webhooks(config: dict | None) -> bool:
    return bool(config and config.get("webhooks"))


async def start_operator(kopf_cluster, kopf_operator) -> None:
    """Start the operator and wait until the apiserver knows its webhooks (they are registered at startup)."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"])
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        await kopf_cluster.wait_for(kind, "auto.kopf.dev", condition=has_webhooks, timeout=30)


def example(name: str, **spec: str) -> dict:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}, "spec": spec}


async def test_forbidden_objects_are_rejected(kopf_cluster, kopf_operator):
    await start_operator(kopf_cluster, kopf_operator)

    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create(example("bad", field="forbidden", duration="5m"))
    assert err.value.code == 422
    assert "The field must not be 'forbidden'." in err.value.message
    assert await kopf_cluster.get("kopfexamples", "bad") is None

    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_missing_duration_is_defaulted(kopf_cluster, kopf_operator):
    await start_operator(kopf_cluster, kopf_operator)

    defaulted = await kopf_cluster.create(example("defaulted", field="fine"))
    kept = await kopf_cluster.create(example("kept", field="fine", duration="5m"))
    assert defaulted["spec"] == {"field": "fine", "duration": "1m"}
    assert kept["spec"] == {"field": "fine", "duration": "5m"}

    await kopf_operator.stop()
    assert kopf_operator.exception is None
