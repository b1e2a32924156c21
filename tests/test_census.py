"""The memory census of the benchmarks (benchmarks/census.py): what it reports about a running loop."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import pathlib
from types import ModuleType

CENSUS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "census.py"


def load_census() -> ModuleType:
    spec = importlib.util.spec_from_file_location("census", CENSUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def waiting_for_a_while(event: asyncio.Event) -> None:
    await event.wait()


async def test_a_census_counts_the_objects_and_tells_where_the_tasks_wait() -> None:
    census = load_census()
    event = asyncio.Event()
    tasks = [asyncio.create_task(waiting_for_a_while(event)) for _ in range(3)]
    await asyncio.sleep(0)
    # Enough of them (~4.6 MB) to be among the top shapes whatever the worker's earlier tests left behind.
    keep = [{"marker-key": index} for index in range(20_000)]
    report = io.StringIO()
    census.write_census(report)
    event.set()
    await asyncio.gather(*tasks)
    text = report.getvalue()
    assert text.startswith("=== census: RSS ")
    assert "  dict\n" in text
    assert "  marker-key\n" in text  # twenty thousand dicts of this shape
    assert "3  waiting_for_a_while:" in text and "> Event.wait:" in text
    assert len(keep) == 20_000
