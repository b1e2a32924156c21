"""Which handlers need a finalizer."""

from typing import Any

import pytest

import kopf
from kopf._core.intents.registries import OperatorRegistry

from .helpers import KEX, fn1, obj


@pytest.mark.parametrize(
    ("declare", "expected"),
    [
        (lambda r: kopf.on.delete("kex", registry=r)(fn1), True),
        (lambda r: kopf.on.delete("kex", optional=True, registry=r)(fn1), False),
        (lambda r: kopf.on.delete("kex", optional=False, registry=r)(fn1), True),
        (lambda r: kopf.on.create("kex", registry=r)(fn1), False),
        (lambda r: kopf.on.update("kex", registry=r)(fn1), False),
        (lambda r: kopf.on.resume("kex", deleted=True, registry=r)(fn1), False),
        (lambda r: kopf.on.event("kex", registry=r)(fn1), False),
        (lambda r: kopf.index("kex", registry=r)(fn1), False),
        (lambda r: kopf.daemon("kex", registry=r)(fn1), True),
        (lambda r: kopf.timer("kex", registry=r)(fn1), True),
        (lambda r: kopf.on.validate("kex", registry=r)(fn1), False),
        (lambda r: kopf.on.delete("pods", registry=r)(fn1), False),  # another resource
    ],
)
def test_finalizer_requirements(registry: OperatorRegistry, declare: Any, expected: bool) -> None:
    declare(registry)
    assert registry.requires_finalizer(KEX, body=obj()) is expected


def test_finalizer_requirements_respect_the_filters(registry: OperatorRegistry) -> None:
    kopf.on.delete("kex", labels={"a": "x"}, registry=registry)(fn1)
    kopf.daemon("kex", field="spec.d", registry=registry)(fn1)
    assert registry.requires_finalizer(KEX, body=obj(labels={"a": "x"}))
    assert registry.requires_finalizer(KEX, body=obj(spec={"d": 1}))
    assert not registry.requires_finalizer(KEX, body=obj())
