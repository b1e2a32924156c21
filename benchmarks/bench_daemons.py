"""Memory per object with a daemon and a timer running (and the object indexed), measured with tracemalloc.

Run: ``python benchmarks/bench_daemons.py [--objects N]``. Prints the figures per object.
The loop is the virtual-time one (the timers tick without real waiting); the daemon & the timer
are async (sync ones would add a thread each: see the docs on the system resources).
The measured memory includes the tasks, their coroutines' frames, the stop-flags, the per-object
memories of the daemons, the live bodies (the raw bodies themselves are counted separately),
and the index entries; the memos are empty.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import time
import tracemalloc
from typing import Any

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.ephemera import Memo
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource
from kopf._core.actions.errors import ErrorsMode
from kopf._core.engines.daemons import DaemonsMemory, DaemonStopped, spawn_daemons, stop_all
from kopf._core.engines.indexing import IndexingMemory, OperatorIndexers, index_object
from kopf._core.intents.handlers import DaemonHandler, IndexingHandler, TimerHandler
from kopf_sim.timing import virtualtime

RESOURCE = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
LOGGER = logging.getLogger("bench.daemons")
COMMON: dict[str, Any] = dict(
    param=None,
    timeout=None,
    retries=None,
    backoff=60,
    selector=None,
    labels=None,
    annotations=None,
    when=None,
    field=None,
    value=None,
)


async def daemon_fn(stopped: DaemonStopped, **_: Any) -> None:
    while not stopped:
        await stopped.wait(600)


async def timer_fn(**_: Any) -> None:
    pass


def index_fn(name: str, namespace: str, **_: Any) -> Any:
    return {namespace: name}


def make_body(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {
            "name": f"kex-{i:05d}",
            "namespace": f"ns{i % 10}",
            "uid": f"uid-{i:05d}",
            "resourceVersion": "1",
            "labels": {"app": "bench"},
        },
        "spec": {"field": "value"},
    }


async def sink(patch: Patch) -> None:
    pass


async def main(n: int) -> None:
    settings = OperatorSettings()
    handlers = [
        DaemonHandler(
            fn=daemon_fn,
            id=HandlerId("daemon_fn"),
            errors=ErrorsMode.TEMPORARY,
            initial_delay=None,
            cancellation_backoff=None,
            cancellation_timeout=None,
            cancellation_polling=None,
            **COMMON,
        ),
        TimerHandler(
            fn=timer_fn,
            id=HandlerId("timer_fn"),
            errors=ErrorsMode.TEMPORARY,
            initial_delay=None,
            interval=60,
            sharp=False,
            idle=None,
            **COMMON,
        ),
    ]
    indexer = IndexingHandler(fn=index_fn, id=HandlerId("by_namespace"), errors=ErrorsMode.IGNORED, **COMMON)
    indexers = OperatorIndexers()

    gc.collect()
    tracemalloc.start()
    bodies = [make_body(i) for i in range(n)]
    bodies_size, _ = tracemalloc.get_traced_memory()

    started = time.perf_counter()
    memories: list[tuple[DaemonsMemory, IndexingMemory, Memo]] = []
    for body in bodies:
        memo = Memo()
        memory, imemory = DaemonsMemory(), IndexingMemory()
        memories.append((memory, imemory, memo))
        await spawn_daemons(
            settings=settings,
            handlers=handlers,
            memory=memory,
            body=body,
            resource=RESOURCE,
            logger=LOGGER,
            memo=memo,
            indices=indexers.indices,
            patch_sink=sink,
        )
        await index_object(
            indexers=indexers,
            handlers=[indexer],
            body=body,
            memory=imemory,
            resource=RESOURCE,
            logger=LOGGER,
            settings=settings,
            memo=memo,
            indices=indexers.indices,
        )
    await asyncio.sleep(1)  # all daemons & timers have started and are sleeping now.
    spawned_in = time.perf_counter() - started
    gc.collect()
    total, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    tasks = len(asyncio.all_tasks()) - 1
    engines = total - bodies_size
    print(f"objects:                          {n:>10,}")
    print(f"tasks running:                    {tasks:>10,}")
    print(f"spawning & indexing took:         {spawned_in:>10.3f} s (real time)")
    print(f"raw bodies (not counted below):   {bodies_size / n:>10,.0f} bytes/object")
    print(
        f"daemon + timer + index entry:     {engines / n:>10,.0f} bytes/object "
        f"({engines / 2**20:,.1f} MiB in total; peak {peak / 2**20:,.1f} MiB with the bodies)"
    )

    started = time.perf_counter()
    await stop_all([memory for memory, _, _ in memories], settings=settings)
    print(f"stopping all took:                {time.perf_counter() - started:>10.3f} s (real time)")
    settings.execution.executor.shutdown(wait=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    args = parser.parse_args()
    virtualtime.run(main(args.objects))
