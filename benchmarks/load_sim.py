"""A load test of a served simulator: many writers and watchers at once, and the watches' integrity.

Run: ``python benchmarks/load_sim.py [--writers 20] [--watchers 10] [--seconds 60] [--history N]``,
at scale: ``--objects 100000 --watchers 100`` (ConfigMaps that the server loads at its start, among which
the writers write), and a burst: ``--objects 10000 --burst 5000`` (see below).

``kopf-sim serve`` runs in a subprocess; this process runs the clients (aiohttp, one event loop). Each
writer creates, patches, replaces and deletes ConfigMaps of its own, as fast as the server answers;
each watcher lists once (in pages of 500, as client-go's reflectors do) and then watches from the list's
version for the whole run; the writers start when every watcher watches, and the watchers stop when they
have seen the last change. At the end:

* throughput: requests per second, the latency percentiles of the writes, the server's peak memory;
* integrity: every watcher saw strictly increasing versions; every write that a writer saw succeed is
  in every watcher's stream exactly once; all watchers saw the same sequence; the state rebuilt from
  each watcher's events equals the final list. A watcher that is let go (it fell behind by more than
  the history window) resumes from its last version, or relists on 410 Expired: it is then counted,
  and checked only for its final state.

With ``--burst N``, before that: N requests at once, each over a connection of its own (as an operator with
a request per object in flight), while the server also lists all the ``--objects`` ConfigMaps that it has
loaded at its start (a busy loop): every request must get an answer, none a dropped connection.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import os
import pathlib
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import aiohttp

URL = "/api/v1/namespaces/default/configmaps"
PAGE = 500
_shared: dict[object, object] = {}  # the names and versions that all watchers hold: held once


@dataclasses.dataclass
class Watcher:
    events: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)  # (type, name, rv)
    state: dict[str, int] = dataclasses.field(default_factory=dict)  # name -> rv
    last: int = 0  # the latest version seen
    watching: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)  # set once it watches
    moved: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)  # set when ``last`` changes
    relists: int = 0
    reconnects: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)


async def writer(
    session: aiohttp.ClientSession,
    index: int,
    deadline: float,
    rng: random.Random,
    latencies: list[float],
    written: set[int],
    errors: list[str],
) -> int:
    names: dict[str, str] = {}  # name -> last resourceVersion
    requests = 0
    while time.monotonic() < deadline:
        name = f"w{index}-{rng.randrange(5)}"
        started = time.perf_counter()
        if name not in names:
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"n": "0"}}
            response = await session.post(URL, json=body)
        else:
            choice = rng.random()
            if choice < 0.6:
                response = await session.patch(
                    f"{URL}/{name}",
                    json={"data": {"n": str(rng.random())}},
                    headers={"Content-Type": "application/merge-patch+json"},
                )
            elif choice < 0.8:
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "resourceVersion": names[name]},
                    "data": {"r": "1"},
                }
                response = await session.put(f"{URL}/{name}", json=body)
            else:
                response = await session.delete(f"{URL}/{name}")
        data = await response.json()
        latencies.append(time.perf_counter() - started)
        requests += 1
        if response.status in (200, 201) and data.get("kind") == "ConfigMap":
            names[name] = data["metadata"]["resourceVersion"]
            written.add(int(names[name]))
        elif response.status == 200 and data.get("kind") == "Status":  # deleted at once
            names.pop(name, None)
        else:
            errors.append(f"{response.status} {data.get('message')}")
    return requests


async def list_all(session: aiohttp.ClientSession) -> tuple[dict[str, int], int]:
    """Every ConfigMap's name and version (listed in pages), and the list's version."""
    state: dict[str, int] = {}
    params = {"limit": str(PAGE)}
    while True:
        async with session.get(URL, params=params) as response:
            listing = await response.json()
        for item in listing["items"]:
            name, rv = item["metadata"]["name"], int(item["metadata"]["resourceVersion"])
            state[_shared.setdefault(name, name)] = _shared.setdefault(rv, rv)  # type: ignore[index,assignment]
        token = listing["metadata"].get("continue")
        if not token:
            return state, int(listing["metadata"]["resourceVersion"])
        params = {"limit": str(PAGE), "continue": token}


async def caught_up(watcher: Watcher, rv: int) -> None:
    while watcher.last < rv:
        watcher.moved.clear()
        await watcher.moved.wait()


async def watch(session: aiohttp.ClientSession, result: Watcher) -> None:
    """List, then watch from the list's version until cancelled (again from the last version seen when a stream
    ends; listing again after a 410)."""

    async def relist() -> None:
        result.state, rv = await list_all(session)
        advance(rv)

    def advance(rv: int) -> None:
        result.last = rv
        result.moved.set()

    await relist()
    while True:
        params = {"watch": "true", "resourceVersion": str(result.last), "allowWatchBookmarks": "true"}
        params["timeoutSeconds"] = "300"
        async with session.get(URL, params=params, timeout=aiohttp.ClientTimeout(total=None)) as response:
            result.watching.set()  # subscribed: what is written from now on reaches it
            async for line in response.content:
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        result.relists += 1
                        await relist()
                        break
                    result.problems.append(f"error event: {obj}")
                    continue
                rv = int(obj["metadata"]["resourceVersion"])
                if kind != "BOOKMARK":
                    if rv <= result.last:
                        result.problems.append(f"version {rv} after {result.last}")
                    name = obj["metadata"]["name"]
                    result.events.append((kind, name, rv))
                    if kind == "DELETED":
                        result.state.pop(name, None)
                    else:
                        result.state[name] = rv
                advance(rv)
        result.reconnects += 1


async def burst(base: str, requests: int, objects: int) -> bool:
    """Many requests at once over as many connections, while the server lists every object: all answered?"""
    failures: collections.Counter[str] = collections.Counter()
    answered = 0
    timeout = aiohttp.ClientTimeout(total=120)
    connector = aiohttp.TCPConnector(limit=0, force_close=True)  # a connection per request, all at once
    async with aiohttp.ClientSession(base, connector=connector, timeout=timeout) as session:

        async def one(index: int) -> None:
            nonlocal answered
            name = f"preloaded-{index % objects:05d}" if objects else "none"
            patch = {"data": {"n": str(index)}}
            try:
                async with session.patch(
                    f"{URL}/{name}", json=patch, headers={"Content-Type": "application/merge-patch+json"}
                ) as response:
                    await response.read()
                    answered += 1
                    if response.status not in (200, 404):
                        failures[f"HTTP {response.status}"] += 1
            except (TimeoutError, aiohttp.ClientError) as exc:
                failures[f"{type(exc).__name__}: {str(exc)[:50]}"] += 1

        async def lists() -> None:
            for _ in range(3):
                try:
                    async with session.get(URL) as response:
                        await response.read()
                except (TimeoutError, aiohttp.ClientError) as exc:
                    failures[f"list: {type(exc).__name__}"] += 1

        started = time.monotonic()
        await asyncio.gather(lists(), *(one(index) for index in range(requests)))
        elapsed = time.monotonic() - started
    print(
        f"burst: {requests} requests at once over as many connections, 3 lists of {objects} objects meanwhile: "
        f"{answered} answered in {elapsed:.1f} s; failed: {dict(failures) or 'none'}"
    )
    return not failures


def preload_manifest(path: str, objects: int) -> None:
    """The ConfigMaps that the server loads at its start, for a burst (JSON documents are YAML too)."""
    with open(path, "w") as f:
        for index in range(objects):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"preloaded-{index:05d}"}}
            f.write(f"---\n{json.dumps({**body, 'data': {'n': '0'}})}\n")


def peak_rss_mb(pid: int) -> float:
    match = re.search(r"VmHWM:\s+(\d+) kB", pathlib.Path(f"/proc/{pid}/status").read_text())
    assert match is not None
    return int(match.group(1)) / 1024


async def run(base: str, args: argparse.Namespace, server_pid: int) -> bool:
    burst_ok = await burst(base, args.burst, args.objects) if args.burst else True
    rng = random.Random(args.seed)
    latencies: list[float] = []
    written: set[int] = set()
    errors: list[str] = []
    watchers = [Watcher() for _ in range(args.watchers)]
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(base, connector=connector) as session:
        rss_before = peak_rss_mb(server_pid)
        listing = time.monotonic()
        watching = [asyncio.create_task(watch(session, w)) for w in watchers]
        await asyncio.gather(*(w.watching.wait() for w in watchers))
        print(f"{len(watchers)} watchers listed and watch, after {time.monotonic() - listing:.1f} s")
        started = time.monotonic()
        deadline = started + args.seconds
        counts = await asyncio.gather(
            *(
                writer(session, i, deadline, random.Random(rng.random()), latencies, written, errors)
                for i in range(args.writers)
            )
        )
        elapsed = time.monotonic() - started
        final, final_rv = await list_all(session)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(60):  # the last events are on their way
                await asyncio.gather(*(caught_up(w, final_rv) for w in watchers))
        for task in watching:
            task.cancel()
        await asyncio.gather(*watching, return_exceptions=True)
    requests = sum(counts)
    ordered = sorted(latencies)
    print(
        f"{args.writers} writers, {args.watchers} watchers, {elapsed:.0f} s: {requests} writes "
        f"({requests / args.seconds:.0f}/s), latency p50 {statistics.median(ordered) * 1000:.1f} ms, "
        f"p99 {ordered[int(len(ordered) * 0.99)] * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms; "
        f"{len(errors)} failed writes (conflicts expected: {sum('modified' in e for e in errors)})"
    )
    print(
        f"server peak RSS: {rss_before:.1f} -> {peak_rss_mb(server_pid):.1f} MB; "
        f"events per watcher: {[len(w.events) for w in watchers]}"
    )
    intact = True
    reference = next((w.events for w in watchers if not w.relists), None)
    for index, w in enumerate(watchers):
        seen = [rv for _, _, rv in w.events]
        problems = list(w.problems)
        if not w.relists:
            if len(seen) != len(set(seen)):
                problems.append("an event twice")
            missing = written - set(seen)
            if missing:
                problems.append(f"{len(missing)} successful writes never seen, e.g. {sorted(missing)[:5]}")
            if w.events != reference:
                problems.append("a different sequence than the other watchers")
        if w.state != final:
            problems.append("its rebuilt state differs from the final list")
        intact = intact and not problems
        print(
            f"watcher {index}: {len(w.events)} events, {w.relists} relists, {w.reconnects} streams: "
            f"{'; '.join(problems) or 'exact'}"
        )
    print(f"integrity: {'every change exactly once, in order, by every watcher' if intact else 'BROKEN'}")
    return intact and burst_ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=20)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--history", type=int, default=None, help="the server's --history (default: its own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--objects", type=int, default=0, help="ConfigMaps the server loads at its start")
    parser.add_argument("--burst", type=int, default=0, help="requests at once, before the writers and watchers")
    args = parser.parse_args()
    if args.burst:  # this process holds a connection per request too
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.burst + 1024)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "kopf_sim", "serve", "--kubeconfig", os.path.join(tmp, "kubeconfig")]
        if args.history:
            command += ["--history", str(args.history)]
        if args.objects:
            manifest = os.path.join(tmp, "objects.yaml")
            preload_manifest(manifest, args.objects)
            command += ["--controllers", "none", "--load", manifest]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            match = re.search(r"at (http://\S+)", server.stdout.readline())
            assert match is not None
            intact = asyncio.run(run(match.group(1), args, server.pid))
        finally:
            server.terminate()
            server.wait(timeout=30)
    sys.exit(0 if intact else 1)


if __name__ == "__main__":
    main()
