"""The served simulator at scale: loading, memory, paginated lists and watches over N ConfigMaps.

Run: ``python benchmarks/bench_scale.py [--objects 100000] [--repeats 3] [--starts N] [--kubectl] [--pages-only]
[--baseline DIR]``
(a million objects: ``--objects 1000000 --starts 1 --pages-only``; Services' address allocation: ``--services 20000``,
which loads N/4 and then N Services in this process: the CPU per object stays the same when allocation is O(1)).

A manifest of N small ConfigMaps (~260 bytes of JSON each, as ``---``-separated JSON documents; two labels,
``group`` taking 100 values) is loaded by ``kopf-sim serve --controllers none --load`` in a subprocess, R times
(or ``--starts`` times); an empty simulator is started R times too. This process (aiohttp, over loopback) then
measures, each R times, the seconds until it has the answer, and the server's CPU time per run:

* ready: seconds from starting the server until it serves (it prints its URL after loading), and its CPU
  (an empty simulator's too: the loading's CPU per object is the difference);
* RSS: the server's resident memory when ready, minus the empty simulator's, per object;
* a first page (``?limit=500``) and a continued page (from the middle of the list), their bytes;
* the full paginated walk (``limit=500`` pages until no ``continue``), each page parsed (as a client does: by
  orjson where it is installed, as by the simulator itself);
* a full list without ``limit`` (its bytes, not parsed); a label-selected list (``group=g7``: 1% of the objects);
* a watch from ``resourceVersion=0``: until its first event arrives, and until all N have;
* with ``--kubectl``: ``kubectl get configmaps`` (its pages of 500, as Tables), once;
* with ``--baseline DIR`` (a source tree of another version, e.g. ``git archive main kopf kopf_sim | tar -x -C DIR``):
  that version's server is loaded as many times, each start just before one of this version's, and its ready
  figures are printed side by side with these.

With ``--pages-only``, the reads of the whole resource (the parsed walk, the full list, the watch to its end)
are left out: the walk only collects its continue tokens (pages read as bytes), once, and the watch from
``resourceVersion=0`` is timed to its first event.

Figures are medians of the R runs, all in the same run of this script (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

import aiohttp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # (run as a script)

from calibration import calibrate

try:
    import orjson  # (the `speed` extra: a page of 500 parsed in a third of the time)
except ImportError:
    orjson = None  # type: ignore[assignment]


def parse_json(body: bytes) -> object:
    return json.loads(body) if orjson is None else orjson.loads(body)


URL = "/api/v1/namespaces/default/configmaps"
PAGE = 500
GROUPS = 100  # label values: a selected list is 1% of the objects


def write_manifest(path: str, objects: int) -> None:
    with open(path, "w") as f:
        for index in range(objects):
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"cm-{index:07d}",
                    "namespace": "default",
                    "labels": {"app": "scale", "group": f"g{index % GROUPS}"},
                },
                "data": {"index": str(index), "payload": "x" * 70},
            }
            f.write(f"---\n{json.dumps(body)}\n")


def services_load(objects: int) -> None:
    """Services loaded in this process: each cluster IP is allocated in O(1), so the cost per object stays flat."""
    from kopf_sim.store.cluster import Cluster  # (only here: the rest of the script measures a served simulator)

    for count in (objects // 4, objects):
        manifest = [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": f"svc-{index:07d}", "namespace": "default"},
                "spec": {"selector": {"app": f"a{index}"}, "ports": [{"port": 80, "targetPort": 8080}]},
            }
            for index in range(count)
        ]
        started = time.process_time()
        Cluster().load(manifest)
        cpu = time.process_time() - started
        print(f"{count} Services loaded in this process: CPU {cpu:.2f} s, {cpu / count * 1e6:.0f} us per object")


#: The server runs as an installed package does, from its cached bytecode (written by :func:`cache_bytecode`),
#: even where the environment says not to write any (compiling every module again costs a start 0.3-0.5 s).
INSTALLED_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def source_env(source: str | None) -> dict[str, str]:
    """The environment of a server run from this version, or from the source tree of another (``--baseline``)."""
    return INSTALLED_ENV if source is None else {**INSTALLED_ENV, "PYTHONPATH": os.path.abspath(source)}


def cache_bytecode(source: str | None = None) -> None:
    subprocess.run([sys.executable, "-c", "import kopf_sim.cli"], env=source_env(source), check=True, cwd="/")


class Server:
    """``kopf-sim serve`` in a subprocess: started, timed until it serves, stopped."""

    def __init__(self, tmp: str, manifest: str | None, source: str | None = None) -> None:
        self.kubeconfig = os.path.join(tmp, "kubeconfig")
        command = [sys.executable, "-m", "kopf_sim", "serve", "--controllers", "none", "--kubeconfig", self.kubeconfig]
        if manifest:
            command += ["--load", manifest]
        started = time.perf_counter()
        self.process = subprocess.Popen(  # (not from this directory, which would come first on the module path)
            command, stdout=subprocess.PIPE, text=True, env=source_env(source), cwd=tmp
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.ready = time.perf_counter() - started
        match = re.search(r"at (http://\S+)", line)
        if match is None:
            self.stop()
            raise RuntimeError(f"the server did not start: {line!r}")
        self.url = match.group(1)
        self.ready_cpu = self.cpu()

    def rss_mb(self, field: str = "VmRSS") -> float:
        match = re.search(rf"{field}:\s+(\d+) kB", pathlib.Path(f"/proc/{self.process.pid}/status").read_text())
        assert match is not None
        return int(match.group(1)) / 1024

    def cpu(self) -> float:
        """The server's CPU seconds so far (user + system; 10 ms resolution)."""
        fields = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


async def fetch(session: aiohttp.ClientSession, params: dict[str, str]) -> dict[str, object]:
    async with session.get(URL, params=params) as response:
        body = await response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:300]!r}")
    data = parse_json(body)
    assert isinstance(data, dict)
    return data


async def fetch_bytes(session: aiohttp.ClientSession, params: dict[str, str]) -> int:
    """A list's bytes as the server sends them (the server's answer, without the client's parsing)."""
    async with session.get(URL, params=params) as response:
        body = await response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:300]!r}")
        return len(body)


async def walk(session: aiohttp.ClientSession) -> tuple[int, int, list[str]]:
    """The whole list in pages of 500: (objects, pages, the continue tokens handed out)."""
    params = {"limit": str(PAGE)}
    count = pages = 0
    tokens: list[str] = []
    names: set[str] = set()
    while True:
        listing = await fetch(session, params)
        items = listing["items"]
        assert isinstance(items, list)
        names.update(item["metadata"]["name"] for item in items)
        count += len(items)
        pages += 1
        token = listing["metadata"].get("continue")  # type: ignore[attr-defined]
        if not token:
            break
        tokens.append(token)
        params = {"limit": str(PAGE), "continue": token}
    assert len(names) == count, "an object came twice in the walk"
    return count, pages, tokens


async def walk_tokens(session: aiohttp.ClientSession) -> list[str]:
    """The continue tokens of a walk in pages of 500, the pages read as bytes (only their metadata is parsed)."""
    params = {"limit": str(PAGE)}
    tokens: list[str] = []
    while True:
        async with session.get(URL, params=params) as response:
            head = await response.content.read(1024)  # the list's metadata comes before its items
            await response.read()
        match = re.search(rb'"continue":"([^"]+)"', head.partition(b'"items":')[0])
        if match is None:
            return tokens
        tokens.append(match.group(1).decode())
        params = {"limit": str(PAGE), "continue": tokens[-1]}


async def watch_from_zero(session: aiohttp.ClientSession, objects: int, firsts: list[float]) -> None:
    """A watch from ``resourceVersion=0`` until ``objects`` came; the seconds to its first event: to ``firsts``."""
    started = time.perf_counter()
    seen = 0
    params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "600"}
    async with session.get(URL, params=params, timeout=aiohttp.ClientTimeout(total=None)) as response:
        async for _ in response.content:
            seen += 1
            if seen == 1:
                firsts.append(time.perf_counter() - started)
            if seen >= objects:
                break


def median(values: list[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def kubectl_get(server: Server) -> None:
    """``kubectl get configmaps``, as a user would: its pages of 500, as Tables."""
    started, cpu = time.perf_counter(), server.cpu()
    result = subprocess.run(
        ["kubectl", "--kubeconfig", server.kubeconfig, "get", "configmaps", "-n", "default", "--no-headers"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = len(result.stdout.splitlines())
    elapsed = time.perf_counter() - started
    print(f"kubectl get configmaps: {lines} rows in {elapsed:.2f} s, server CPU {server.cpu() - cpu:.2f} s")


async def measure(server: Server, label: str, repeats: int, fn: Callable[[], Awaitable[object]]) -> list[float]:
    """Run it ``repeats`` times: print the median seconds (client-side) and the server's CPU per run."""
    walls: list[float] = []
    cpu = server.cpu()
    for _ in range(repeats):
        started = time.perf_counter()
        await fn()
        walls.append(time.perf_counter() - started)
    per_run = (server.cpu() - cpu) / repeats
    runs = ", ".join(ms(t) for t in walls)
    print(f"{label}: {ms(median(walls))}, server CPU {ms(per_run)} per run  (runs: {runs})")
    return walls


async def measure_reads(server: Server, objects: int, repeats: int, *, pages_only: bool) -> None:
    timeout = aiohttp.ClientTimeout(total=1800)
    async with aiohttp.ClientSession(server.url, timeout=timeout) as session:
        first = {"limit": str(PAGE)}
        await measure(server, f"a first page of {PAGE}", repeats, lambda: fetch_bytes(session, first))
        if pages_only:
            started = time.perf_counter()
            tokens = await walk_tokens(session)
            pages = len(tokens) + 1
            print(f"the walk's {pages} pages read as bytes, once: {time.perf_counter() - started:.2f} s")
        else:
            found = await walk(session)  # untimed: the objects are all there, each once
            assert found[0] == objects, f"the walk found {found[0]} objects, not {objects}"
            pages, tokens = found[1], found[2]
        continued = {"limit": str(PAGE), "continue": tokens[len(tokens) // 2] if tokens else ""}
        await measure(server, f"a continued page of {PAGE}", repeats, lambda: fetch_bytes(session, continued))
        many = max(repeats, 20)  # the server's CPU per page, over enough of them for the clock's 10 ms ticks
        await measure(server, f"{many} continued pages of {PAGE}", many, lambda: fetch_bytes(session, continued))
        if not pages_only:
            await measure(server, f"the paginated walk ({pages} pages)", repeats, lambda: walk(session))
        selected = {"labelSelector": f"group=g{7 % GROUPS}"}
        await measure(
            server, f"a label-selected list ({objects // GROUPS} objects)", repeats, lambda: fetch(session, selected)
        )
        if not pages_only:
            await measure(
                server, "a full list without limit (read, not parsed)", repeats, lambda: fetch_bytes(session, {})
            )
        firsts: list[float] = []
        until = 1 if pages_only else objects
        await measure(
            server,
            f"a watch from resourceVersion=0 until {until} of {objects} objects",
            repeats,
            lambda: watch_from_zero(session, until, firsts),
        )
        print(
            f"a watch from resourceVersion=0: its first event after {ms(median(firsts))}  "
            f"(runs: {', '.join(ms(t) for t in firsts)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--starts", type=int, default=None, help="how many loaded starts (default: --repeats)")
    parser.add_argument("--kubectl", action="store_true", help="also time `kubectl get configmaps` (once)")
    parser.add_argument("--pages-only", action="store_true", help="no reads of the whole resource (see above)")
    parser.add_argument("--services", type=int, default=0, help="only load N Services (and N/4) in this process")
    parser.add_argument("--baseline", help="a source tree of another version: its loads side by side (see above)")
    args = parser.parse_args()
    if args.services:
        services_load(args.services)
        return
    with tempfile.TemporaryDirectory() as tmp:
        manifest = os.path.join(tmp, "configmaps.yaml")
        write_manifest(manifest, args.objects)
        size = os.path.getsize(manifest)
        print(f"{args.objects} ConfigMaps, {size / args.objects:.0f} bytes of JSON each; medians of {args.repeats}")
        print(f"calibration: {calibrate():.0f} ms (75 on a quiet machine; more: the machine is busy)")
        cache_bytecode()
        if args.baseline:
            cache_bytecode(args.baseline)
        empty_rss: list[float] = []
        empty_readies: list[float] = []
        empty_cpus: list[float] = []
        for _ in range(args.repeats):
            server = Server(tmp, None)
            empty_readies.append(server.ready)
            empty_cpus.append(server.ready_cpu)
            time.sleep(0.5)
            empty_rss.append(server.rss_mb())
            server.stop()
        print(
            f"an empty simulator ready after {median(empty_readies):.2f} s, CPU {median(empty_cpus):.2f} s  "
            f"(runs: {', '.join(f'{t:.2f} s' for t in empty_readies)})"
        )
        readies: list[float] = []
        ready_cpus: list[float] = []
        loaded_rss: list[float] = []
        starts = args.starts or args.repeats
        baseline_readies: list[float] = []
        baseline_cpus: list[float] = []
        for attempt in range(starts):
            if args.baseline:
                baseline = Server(tmp, manifest, args.baseline)
                baseline_readies.append(baseline.ready)
                baseline_cpus.append(baseline.ready_cpu)
                baseline.stop()
            server = Server(tmp, manifest)
            readies.append(server.ready)
            ready_cpus.append(server.ready_cpu)
            loaded_rss.append(server.rss_mb())
            if attempt < starts - 1:
                server.stop()
        empty, loaded = median(empty_rss), median(loaded_rss)
        if args.baseline:
            print(
                f"the baseline ({args.baseline}) ready after --load: {median(baseline_readies):.2f} s, "
                f"CPU {median(baseline_cpus):.2f} s  (runs: {', '.join(f'{t:.2f} s' for t in baseline_readies)}; "
                f"CPU {', '.join(f'{t:.2f} s' for t in baseline_cpus)})"
            )
        loading_cpu = (median(ready_cpus) - median(empty_cpus)) / args.objects
        print(
            f"ready after --load: {median(readies):.2f} s, CPU {median(ready_cpus):.2f} s  "
            f"(runs: {', '.join(f'{t:.2f} s' for t in readies)}; CPU {', '.join(f'{t:.2f} s' for t in ready_cpus)}); "
            f"loading's CPU {loading_cpu * 1e6:.0f} us per object; "
            f"an empty simulator's RSS {empty:.0f} MB, loaded {loaded:.0f} MB: "
            f"{(loaded - empty) * 1024 / args.objects:.2f} KB per object"
        )
        try:
            asyncio.run(measure_reads(server, args.objects, args.repeats, pages_only=args.pages_only))
            if args.kubectl and shutil.which("kubectl"):
                kubectl_get(server)
            print(f"server RSS after the reads: {server.rss_mb():.0f} MB (peak {server.rss_mb('VmHWM'):.0f} MB)")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
