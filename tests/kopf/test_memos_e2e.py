"""End to end in the simulated cluster: the memos as documented (per object, copied from the operator's, custom)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import kopf
from pytest_kopf.client import Client
from pytest_kopf.operator import KopfOperator

CRD = "examples/crd.yaml"


def example(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}}


async def test_a_memo_per_object_shared_by_its_handlers_and_new_for_a_recreated_object(
    kopf_cluster: Client, kopf_operator: KopfOperator
) -> None:
    registry = kopf.OperatorRegistry()
    seen: list[tuple[str, int, list[str], bool]] = []
    shared_list: list[str] = []

    @kopf.on.startup(registry=registry)
    def startup_fn(memo: kopf.Memo, **_: Any) -> None:
        memo.names = shared_list  # a mutable value: the same object in every object's memo
        memo.greeting = "hi"

    @kopf.on.event("kopfexamples", registry=registry)
    def pinged(memo: kopf.Memo, name: str, type: str | None, **_: Any) -> None:
        memo.counter = memo.get("counter", 0) + 1
        if type != "DELETED":
            memo.names.append(name)

    @kopf.timer("kopfexamples", registry=registry, interval=10)
    def tick(memo: kopf.Memo, name: str, **_: Any) -> None:
        seen.append((name, memo.counter, list(memo.names), memo.greeting == "hi"))

    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry)
    await kopf_cluster.create(example("ex1"))
    await kopf_cluster.create(example("ex2"))
    await asyncio.sleep(15)
    counters = {name: counter for name, counter, _, _ in seen}
    assert set(counters) == {"ex1", "ex2"} and all(counter >= 1 for counter in counters.values())
    assert all(greeted for *_, greeted in seen)
    assert {"ex1", "ex2"} <= set(shared_list)  # appended via the objects' memos to the operator's list

    before = max(counter for name, counter, _, _ in seen if name == "ex1")
    await kopf_cluster.delete("kopfexamples", "ex1")
    await kopf_cluster.wait_gone("kopfexamples", "ex1")
    seen.clear()
    await kopf_cluster.create(example("ex1"))  # a new object with the same name: a new memo
    await asyncio.sleep(15)
    recreated = [counter for name, counter, _, _ in seen if name == "ex1"]
    assert recreated and recreated[0] < before + 2
    await kopf_operator.stop()


@dataclasses.dataclass
class Context:
    template: str
    calls: list[str] = dataclasses.field(default_factory=list)

    def __copy__(self) -> Context:
        return self  # one context for all objects


async def test_a_custom_memo_class_given_to_the_operator(kopf_cluster: Client, kopf_operator: KopfOperator) -> None:
    registry = kopf.OperatorRegistry()

    @kopf.on.create("kopfexamples", registry=registry)
    def create_fn(memo: Context, name: str, **_: Any) -> None:
        memo.calls.append(memo.template.format(name=name))

    context = Context(template="Hello, {name}!")
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(registry=registry, memo=context)
    await kopf_cluster.create(example("ex1"))
    await kopf_cluster.create(example("ex2"))
    await asyncio.sleep(10)
    assert sorted(context.calls) == ["Hello, ex1!", "Hello, ex2!"]
    await kopf_operator.stop()
