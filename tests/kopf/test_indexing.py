"""In-memory indexing: the index structure, updates & removals, errors of the indexing functions, readiness."""

import asyncio
import logging
from collections.abc import Collection, Mapping
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.ephemera import Memo
from kopf._core.engines.indexing import (
    Index,
    IndexingMemory,
    OperatorIndexers,
    Store,
    discard_object,
    index_object,
)
from kopf._core.intents.handlers import IndexingHandler

from .spawning_helpers import LOGGER, RESOURCE, index_handler, make_body

pytestmark = pytest.mark.looptime


async def index(
    indexers: OperatorIndexers,
    handlers: list[IndexingHandler],
    body: dict[str, Any],
    memory: IndexingMemory | None = None,
) -> None:
    await index_object(
        indexers=indexers,
        handlers=handlers,
        body=body,
        memory=memory or IndexingMemory(),
        resource=RESOURCE,
        logger=LOGGER,
        memo=Memo(),
    )


def as_dict(idx: Index[Any, Any]) -> dict[Any, list[Any]]:
    return {key: sorted(store, key=repr) for key, store in idx.items()}


async def test_index_is_a_read_only_mapping_of_stores() -> None:
    indexers = OperatorIndexers()
    handler = index_handler(lambda name, namespace, **_: {namespace: name}, id="by_ns")
    await index(indexers, [handler], make_body("pod1"))
    idx = indexers.indices["by_ns"]
    assert isinstance(idx, Index) and isinstance(idx, Mapping)
    assert isinstance(idx["ns1"], Store) and isinstance(idx["ns1"], Collection)
    assert not hasattr(idx, "__setitem__") and not hasattr(idx, "__delitem__")
    assert not hasattr(idx["ns1"], "add") and not hasattr(idx["ns1"], "append")
    assert "pod1" in idx["ns1"]
    assert list(idx["ns1"]) == ["pod1"]
    assert idx["ns1"] == ["pod1"]
    assert idx.get("absent") is None
    assert [] not in idx  # unhashable keys are simply absent.


async def test_values_of_many_objects_accumulate_under_keys() -> None:
    indexers = OperatorIndexers()
    results = {"pod1": {"key1": "valueA"}, "pod2": {"key1": "valueB"}, "pod3": {"key2": {"key3": "valueC"}}}
    handler = index_handler(lambda name, **_: results[name], id="idx")
    for name in results:
        await index(indexers, [handler], make_body(name))
    assert as_dict(indexers.indices["idx"]) == {"key1": ["valueA", "valueB"], "key2": [{"key3": "valueC"}]}


async def test_multiple_keys_per_object_and_tuple_keys() -> None:
    indexers = OperatorIndexers()
    handler = index_handler(
        lambda labels, name, **_: {(label, value): name for label, value in labels.items()}, id="by_label"
    )
    await index(indexers, [handler], make_body("pod1", labels={"a": "1", "b": "2"}))
    await index(indexers, [handler], make_body("pod2", labels={"a": "1"}))
    await index(indexers, [handler], make_body("pod3", labels={"b": "2"}))
    assert as_dict(indexers.indices["by_label"]) == {("a", "1"): ["pod1", "pod2"], ("b", "2"): ["pod1", "pod3"]}


async def test_non_dict_results_go_under_the_none_key() -> None:
    indexers = OperatorIndexers()
    results: dict[str, Any] = {"pod1": "pod1", "pod2": ("ns", "pod2"), "pod3": Memo(x=1), "pod4": {"x", "y"}}
    handler = index_handler(lambda name, **_: results[name], id="flat")
    for name in results:
        await index(indexers, [handler], make_body(name))
    idx = indexers.indices["flat"]
    assert list(idx) == [None]
    assert len(idx[None]) == 4
    assert Memo(x=1) in idx[None]  # a dict subclass is a value, not a mapping of keys.
    assert ("ns", "pod2") in idx[None] and {"x", "y"} in idx[None]


async def test_none_values_in_dicts_are_indexed() -> None:
    indexers = OperatorIndexers()
    handler = index_handler(lambda **_: {"key": None}, id="nones")
    await index(indexers, [handler], make_body("pod1"))
    await index(indexers, [handler], make_body("pod2"))
    assert as_dict(indexers.indices["nones"]) == {"key": [None, None]}


async def test_none_result_keeps_the_existing_values() -> None:
    indexers = OperatorIndexers()
    results: dict[str, Any] = {"pod1": {"key": "v1"}}
    handler = index_handler(lambda name, **_: results[name], id="idx")
    await index(indexers, [handler], make_body("pod1"))
    results["pod1"] = None
    await index(indexers, [handler], make_body("pod1"))
    assert as_dict(indexers.indices["idx"]) == {"key": ["v1"]}


async def test_reindexing_replaces_the_values_and_removes_empty_stores() -> None:
    indexers = OperatorIndexers()
    handler = index_handler(lambda spec, name, **_: {spec["key"]: name}, id="idx")
    await index(indexers, [handler], make_body("pod1", spec={"key": "a"}))
    await index(indexers, [handler], make_body("pod2", spec={"key": "a"}))
    await index(indexers, [handler], make_body("pod1", spec={"key": "b"}))
    assert as_dict(indexers.indices["idx"]) == {"a": ["pod2"], "b": ["pod1"]}
    await index(indexers, [handler], make_body("pod2", spec={"key": "b"}))
    assert as_dict(indexers.indices["idx"]) == {"b": ["pod1", "pod2"]}  # no empty stores.


async def test_deletion_and_filter_mismatch_remove_the_values() -> None:
    indexers = OperatorIndexers()
    h1 = index_handler(lambda name, **_: {"k": name}, id="idx1")
    h2 = index_handler(lambda name, **_: name, id="idx2")
    await index(indexers, [h1, h2], make_body("pod1"))
    await index(indexers, [h1, h2], make_body("pod2"))
    await index(indexers, [h2], make_body("pod1"))  # pod1 does not match idx1 anymore.
    assert as_dict(indexers.indices["idx1"]) == {"k": ["pod2"]}
    assert as_dict(indexers.indices["idx2"]) == {None: ["pod1", "pod2"]}
    discard_object(indexers=indexers, body=make_body("pod2"))
    assert as_dict(indexers.indices["idx1"]) == {}
    assert as_dict(indexers.indices["idx2"]) == {None: ["pod1"]}
    discard_object(indexers=indexers, body=make_body("pod1"))
    assert not indexers.indices["idx2"] and not indexers["idx2"]


async def test_indexing_function_gets_the_kwargs_and_other_indices() -> None:
    indexers = OperatorIndexers()
    seen: dict[str, Any] = {}

    def fn(**kwargs: Any) -> None:
        seen.update(kwargs)

    indexers.ensure([index_handler(lambda **_: None, id="other_idx")])
    await index(indexers, [index_handler(fn, id="idx")], make_body("pod1"))
    assert {
        "body",
        "spec",
        "meta",
        "name",
        "namespace",
        "uid",
        "labels",
        "logger",
        "memo",
        "retry",
        "started",
        "runtime",
        "param",
        "other_idx",
        "idx",
    } <= set(seen)
    assert isinstance(seen["other_idx"], Index)


async def test_ignored_errors_keep_the_stale_values(caplog: pytest.LogCaptureFixture) -> None:
    indexers = OperatorIndexers()
    fail = False

    def fn(name: str, **_: Any) -> Any:
        if fail:
            raise Exception("Keep the stale values, if any.")
        return {"k": name}

    handler = index_handler(fn, id="idx")  # errors=IGNORED is the default of @kopf.index.
    await index(indexers, [handler], make_body("pod1"))
    fail = True
    caplog.set_level(logging.ERROR)
    await index(indexers, [handler], make_body("pod1"))
    assert as_dict(indexers.indices["idx"]) == {"k": ["pod1"]}
    assert "Keep the stale values" in caplog.text and "Traceback" in caplog.text


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        (kopf.ErrorsMode.IGNORED, kopf.PermanentError("Excluded forever.")),
        (kopf.ErrorsMode.PERMANENT, Exception("Excluded forever.")),
    ],
)
async def test_permanent_errors_remove_and_exclude_forever(mode: kopf.ErrorsMode, error: Exception) -> None:
    indexers = OperatorIndexers()
    memory = IndexingMemory()
    calls: list[int] = []
    fail = False

    def fn(name: str, **_: Any) -> Any:
        calls.append(1)
        if fail:
            raise error
        return {"k": name}

    handler = index_handler(fn, id="idx", errors=mode)
    await index(indexers, [handler], make_body("pod1"), memory)
    await index(indexers, [handler], make_body("pod2"))
    fail = True
    await index(indexers, [handler], make_body("pod1"), memory)
    assert as_dict(indexers.indices["idx"]) == {"k": ["pod2"]}
    fail = False
    await asyncio.sleep(3600)
    await index(indexers, [handler], make_body("pod1"), memory)
    assert len(calls) == 3  # not even called for the excluded object.
    assert as_dict(indexers.indices["idx"]) == {"k": ["pod2"]}


@pytest.mark.parametrize(
    ("mode", "error", "delay"),
    [
        (kopf.ErrorsMode.IGNORED, kopf.TemporaryError("Excluded for 30s.", delay=30), 30),
        (kopf.ErrorsMode.TEMPORARY, Exception("Excluded for the backoff."), 60),
    ],
)
async def test_temporary_errors_remove_and_exclude_for_a_delay(
    mode: kopf.ErrorsMode,
    error: Exception,
    delay: float,
) -> None:
    indexers = OperatorIndexers()
    memory = IndexingMemory()
    retries: list[int] = []
    fail = False

    def fn(name: str, retry: int, **_: Any) -> Any:
        retries.append(retry)
        if fail:
            raise error
        return {"k": name}

    handler = index_handler(fn, id="idx", errors=mode, backoff=60)
    await index(indexers, [handler], make_body("pod1"), memory)
    fail = True
    await index(indexers, [handler], make_body("pod1"), memory)
    assert as_dict(indexers.indices["idx"]) == {}
    await asyncio.sleep(delay - 1)
    await index(indexers, [handler], make_body("pod1"), memory)  # still excluded: not called.
    assert retries == [0, 0]
    await asyncio.sleep(2)
    await index(indexers, [handler], make_body("pod1"), memory)  # called again, and fails again.
    assert retries == [0, 0, 1]
    fail = False
    await asyncio.sleep(delay + 1)
    await index(indexers, [handler], make_body("pod1"), memory)
    assert retries == [0, 0, 1, 2]
    assert as_dict(indexers.indices["idx"]) == {"k": ["pod1"]}
    assert not memory.states  # the success resets the retrying state.


async def test_temporary_errors_become_permanent_after_retries() -> None:
    indexers = OperatorIndexers()
    memory = IndexingMemory()
    calls: list[int] = []

    def fn(retry: int, **_: Any) -> Any:
        calls.append(retry)
        raise kopf.TemporaryError("again", delay=0)

    handler = index_handler(fn, id="idx", retries=3)
    for _ in range(10):
        await index(indexers, [handler], make_body("pod1"), memory)
    assert calls == [0, 1, 2]
    assert "idx" in memory.forever


async def test_temporary_errors_become_permanent_after_timeout() -> None:
    indexers = OperatorIndexers()
    memory = IndexingMemory()
    calls: list[int] = []

    def fn(retry: int, **_: Any) -> Any:
        calls.append(retry)
        raise kopf.TemporaryError("again", delay=10)

    handler = index_handler(fn, id="idx", timeout=25)
    for _ in range(10):
        await index(indexers, [handler], make_body("pod1"), memory)
        await asyncio.sleep(11)
    assert calls == [0, 1, 2]
    assert "idx" in memory.forever


async def test_readiness_of_the_indices() -> None:
    indexers = OperatorIndexers()
    assert indexers.is_populated()
    await asyncio.wait_for(indexers.wait_populated(), timeout=1)  # nothing expected: ready at once.

    indexers.expect("pods")
    indexers.expect("services")
    waiter = asyncio.create_task(indexers.wait_populated())
    await asyncio.sleep(1)
    indexers.mark_populated("pods")
    await asyncio.sleep(1)
    assert not waiter.done() and not indexers.is_populated()
    indexers.mark_populated("services")
    await asyncio.wait_for(waiter, timeout=1)
    assert indexers.is_populated()


async def test_indices_exist_before_any_objects() -> None:
    indexers = OperatorIndexers()
    indexers.ensure([index_handler(lambda **_: None, id="idx1"), index_handler(lambda **_: None, id="idx2")])
    assert set(indexers.indices) == {"idx1", "idx2"}
    assert dict(indexers.indices["idx1"]) == {}


async def test_many_objects_are_indexed_and_released() -> None:
    indexers = OperatorIndexers()
    handler = index_handler(lambda name, namespace, **_: {namespace: name}, id="idx")
    bodies = [make_body(f"pod{i}", namespace=f"ns{i % 10}") for i in range(1000)]
    for body in bodies:
        await index(indexers, [handler], body)
    assert len(indexers.indices["idx"]) == 10
    assert sum(len(store) for store in indexers.indices["idx"].values()) == 1000
    for body in bodies:
        discard_object(indexers=indexers, body=body)
    assert len(indexers.indices["idx"]) == 0 and len(indexers["idx"]) == 0
