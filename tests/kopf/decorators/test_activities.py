"""The activities' decorators: startup, cleanup, login, probes and their options."""

from collections.abc import Callable
from typing import Any

import pytest

import kopf
from kopf._core.intents.causes import Activity
from kopf._core.intents.handlers import (
    ActivityHandler,
)
from kopf._core.intents.registries import OperatorRegistry

from .helpers import fn, the_only


@pytest.mark.parametrize(
    ("decorator", "activity"),
    [
        (kopf.on.startup, Activity.STARTUP),
        (kopf.on.cleanup, Activity.CLEANUP),
        (kopf.on.login, Activity.AUTHENTICATION),
        (kopf.on.probe, Activity.PROBE),
    ],
)
def test_activity_defaults(registry: OperatorRegistry, decorator: Callable[..., Any], activity: Activity) -> None:
    result = decorator(registry=registry)(fn)
    assert result is fn
    handler = the_only(registry.activities.get_all_handlers())
    assert isinstance(handler, ActivityHandler)
    assert handler.fn is fn
    assert handler.id == "fn"
    assert handler.activity == activity
    assert handler.param is None
    assert handler.errors == kopf.ErrorsMode.TEMPORARY
    assert handler.timeout is None
    assert handler.retries is None
    assert handler.backoff is None  # resolved at run time from settings.execution.default_backoff


@pytest.mark.parametrize("decorator", [kopf.on.startup, kopf.on.cleanup, kopf.on.login, kopf.on.probe])
def test_activity_options(registry: OperatorRegistry, decorator: Callable[..., Any]) -> None:
    decorator(
        id="x", param=123, errors=kopf.ErrorsMode.PERMANENT, timeout=1.5, retries=3, backoff=0.5, registry=registry
    )(fn)
    handler = the_only(registry.activities.get_all_handlers())
    assert handler.id == "x"
    assert handler.param == 123
    assert handler.errors == kopf.ErrorsMode.PERMANENT
    assert handler.timeout == 1.5
    assert handler.retries == 3
    assert handler.backoff == 0.5


@pytest.mark.parametrize("decorator", [kopf.on.startup, kopf.on.cleanup, kopf.on.login, kopf.on.probe])
def test_activities_take_no_resources(decorator: Callable[..., Any]) -> None:
    with pytest.raises(TypeError):
        decorator("kopfexamples")


def test_activities_use_the_default_registry() -> None:
    old = kopf.get_default_registry()
    kopf.set_default_registry(new := OperatorRegistry())
    try:
        kopf.on.startup()(fn)
    finally:
        kopf.set_default_registry(old)
    assert len(new.activities) == 1
