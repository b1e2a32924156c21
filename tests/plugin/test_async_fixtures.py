"""Users' async fixtures that start the operator: in the test's loop, with or without pytest-asyncio (strict, auto)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import BASE, CONFIGS, NO_ASYNCIO

ROOT = Path(__file__).parent.parent.parent

OPERATOR = """
import kopf

class NotReadyYet(kopf.TemporaryError):
    pass

@kopf.on.create("kopfexamples")
def create_fn(spec, **_):
    if spec.get("fail"):
        raise NotReadyYet("not yet", delay=1)
    return {"message": "created"}
"""

TESTS = """
import asyncio
import pytest
import pytest_kopf

@pytest.fixture
async def operator(kopf_cluster, kopf_operator):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(paths=["operator.py"])
    started = asyncio.get_running_loop().time()
    yield kopf_operator
    await kopf_operator.stop()
    assert asyncio.get_running_loop().time() - started >= 3600  # the teardown runs in the same virtual time

@pytest.fixture
async def created(kopf_cluster, operator):
    return await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                                      "metadata": {"name": "ex1"}, "spec": {}})

async def test_handled(kopf_cluster, operator, created):
    assert created["metadata"]["name"] == "ex1"
    obj = await kopf_cluster.wait_for("kopfexamples", "ex1", condition=lambda o: "create_fn" in o.get("status", {}))
    assert obj["status"]["create_fn"] == {"message": "created"}
    await asyncio.sleep(3600)

async def test_the_loaded_module_has_the_raised_classes(kopf_cluster, operator):
    await asyncio.sleep(3600)
    module = operator.module
    assert issubclass(module.NotReadyYet, Exception)
    assert operator.modules == {"operator.py": module}

def test_a_sync_test_with_the_async_fixture(kopf_loop, operator):
    assert operator.running
    kopf_loop.run(asyncio.sleep(3600))

@pytest.fixture(scope="module")
def other_loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()

def test_starting_in_another_loop_is_a_clear_error(kopf_cluster, kopf_operator, other_loop):
    with pytest.raises(pytest_kopf.errors.KopfOperatorError, match="in another event loop than the test's own"):
        other_loop.run_until_complete(kopf_operator.start(paths=["operator.py"]))
"""


@pytest.mark.parametrize("config", list(CONFIGS))
def test_async_fixtures_that_start_the_operator(pytester: pytest.Pytester, config: str) -> None:
    args, ini = CONFIGS[config]
    pytester.makeini(f"[pytest]\n{ini}")
    (pytester.path / "crd.yaml").write_text((ROOT / "examples" / "crd.yaml").read_text())
    (pytester.path / "operator.py").write_text(OPERATOR)
    pytester.makepyfile(test_fixtures=TESTS)
    result = pytester.runpytest_inprocess(*args, *BASE)
    result.assert_outcomes(passed=4)


STARTUP = """
import kopf

class BadConfig(Exception):
    pass

@kopf.on.create("kopfexamples")
def create_fn(**_):
    raise BadConfig("the configuration is bad")
"""

EXCEPTIONS = '''
import asyncio
import importlib
import pytest
import kopf

@pytest.fixture
def myoperator():
    """The same file, imported by the test: another module, other classes (its handlers go nowhere)."""
    previous = kopf.get_default_registry()
    kopf.set_default_registry(kopf.OperatorRegistry())
    try:
        yield importlib.import_module("myoperator")
    finally:
        kopf.set_default_registry(previous)

async def test_the_handlers_exception_class(kopf_cluster, kopf_operator, myoperator):
    await kopf_cluster.apply("crd.yaml")
    await kopf_operator.start(paths=["myoperator.py"])
    await kopf_cluster.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "ex1"}})
    await asyncio.sleep(1)
    raised = [record.exc_info[1] for record in kopf_operator.records if record.exc_info]
    assert raised
    assert all(isinstance(exc, kopf_operator.module.BadConfig) for exc in raised)
    assert not any(isinstance(exc, myoperator.BadConfig) for exc in raised)
    with pytest.raises(kopf_operator.module.BadConfig, match="bad"):
        raise raised[0]
'''


def test_the_classes_of_the_loaded_operator_are_those_its_handlers_raise(pytester: pytest.Pytester) -> None:
    (pytester.path / "crd.yaml").write_text((ROOT / "examples" / "crd.yaml").read_text())
    (pytester.path / "myoperator.py").write_text(STARTUP)
    pytester.makepyfile(test_exceptions=EXCEPTIONS)
    result = pytester.runpytest_inprocess(*NO_ASYNCIO, *BASE)
    result.assert_outcomes(passed=1)
