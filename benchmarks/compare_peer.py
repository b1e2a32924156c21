"""
Side by side with the published Kopf: the same operator files under both frameworks, as black boxes.

Run: ``python benchmarks/compare_peer.py`` (every figure, about 10-15 minutes on 2 cores), or a part:
``--only throughput,latency,memory``, ``--sizes 1000,10000``, ``--repeat 3``, ``--json results.json``,
``--baseline OTHER/venv/bin/kopf`` (a column more: another checkout, before/after a change, in one run).

The published Kopf (``kopf==1.45.2``) is installed into a throwaway virtual environment of its own
(``tests/compat/peer.py``: our distribution is also named ``kopf``, so never into ours) and is only
run, never read. Each framework runs ``kopf run --standalone --namespace default FILE`` as a subprocess
against its own fresh ``kopf-sim serve`` (plain HTTP on loopback, the workload controllers off), with
the operator files in ``benchmarks/peer_operators/``. The frameworks take turns (peer then ours, ours
then peer on the next repeat), and every figure is printed for both with the ratio ours/peer: the
machine's speed varies from one minute to the next, so the ratios of one run are the figures to trust,
and the CPU seconds (user + system, from ``/proc``) more than the wall seconds.

* **throughput**: N pre-existing objects (loaded by the server at its start) and a create handler
  returning a value: the wall seconds from the operator's spawn until every object's status holds the
  result (as seen by a watch of this process), the objects per second, the operator's CPU seconds per
  object, its peak RSS, and the server's CPU share meanwhile (near 1.0 would mean the server limits the
  figure: one core is all that its one event loop can use).
* **start & stop** (in the same runs): from the spawn to the first handler call (a timestamp that the
  handler writes), and from SIGTERM to the exit once every object is handled (no daemons).
* **latency**: 200 objects handled, then a steady 200 merge-patches per second for 30 s, each object
  once a second, with the write's wall-clock stamp in its spec: an update handler returns the stamp
  and its own call time; the latency is from the write to the handler's patch (when this process's
  watch sees the result), and from the write to the handler's call (by the handler's timestamp).
* **memory**: N objects with a timer each: the operator's peak RSS once every object has ticked once
  (and a few seconds more, the timers keep running), and the server's CPU share until then.

The benchmark's own watch resumes from its last version if its stream ends (the served simulator lets a
watcher that lags 10,000 events behind go, as the apiserver drops slow watchers), or relists on 410.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.compat.peer import PeerUnavailable, ensure_peer  # noqa: E402

OPERATORS = pathlib.Path(__file__).resolve().with_name("peer_operators")
CRD = ROOT / "examples" / "crd.yaml"
COLLECTION = "/apis/kopf.dev/v1/namespaces/default/kopfexamples"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ORDER = ("peer", "ours")


# -------------------------------------------------------------------------------------------------
# The processes: their CPU and memory from /proc.
# -------------------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def memory_kib(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` memory field in KiB: ``VmHWM`` (peak RSS) or ``VmRSS``."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


@dataclasses.dataclass(frozen=True)
class Framework:
    name: str
    kopf: pathlib.Path


def frameworks(baseline: str | None = None) -> dict[str, Framework]:
    ours = pathlib.Path(sys.executable).with_name("kopf")
    if not ours.exists():
        raise SystemExit(f"Our kopf command is not at {ours}: run this with the project's venv interpreter.")
    try:
        peer = ensure_peer()
    except PeerUnavailable as e:
        raise SystemExit(f"The published Kopf cannot be installed here: {e}") from None
    fws = {"peer": Framework("peer", peer.kopf), "ours": Framework("ours", ours)}
    if baseline:  # e.g. the kopf command of another checkout's venv: before/after a change, in one run
        base = pathlib.Path(baseline)
        if not base.exists():
            raise SystemExit(f"The baseline kopf command is not at {base}.")
        fws["base"] = Framework("base", base)
    return fws


class Server:
    """A fresh ``kopf-sim serve`` with the example CRD and N objects loaded at its start."""

    def __init__(self, workdir: pathlib.Path, objects: int, spec: Mapping[str, Any] | None = None) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        manifest = workdir / "objects.yaml"
        spec = dict(spec or {})
        with open(manifest, "w") as f:  # JSON documents are YAML documents too
            for index in range(objects):
                f.write("---\n")
                json.dump(
                    {
                        "apiVersion": "kopf.dev/v1",
                        "kind": "KopfExample",
                        "spec": spec,
                        "metadata": {"name": f"kex-{index:05d}", "namespace": "default"},
                    },
                    f,
                )
                f.write("\n")
        self._log = open(workdir / "server.log", "w+")  # noqa: SIM115 - closed in stop()
        args = [
            sys.executable,
            "-m",
            "kopf_sim",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--kubeconfig",
            str(self.kubeconfig),
            "--controllers",
            "none",
            "--load",
            str(CRD),
            "--load",
            str(manifest),
        ]
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, cwd=str(workdir))
        url = urllib.parse.urlsplit(self._wait_for_url())
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            self._log.seek(0)
            match = re.search(r"Serving a simulated Kubernetes API at (\S+)", self._log.read())
            if match and self.kubeconfig.exists():
                return match.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        self._log.seek(0)
        raise RuntimeError(f"kopf-sim serve did not start:\n{self._log.read()}")

    def cpu(self) -> float:
        return cpu_seconds(self.process.pid)

    def connect(self, timeout: float | None = 30) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


class Client:
    """Plain JSON requests over one kept-alive connection (a thread of its own uses one of these)."""

    def __init__(self, server: Server) -> None:
        self.connection = server.connect()

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        self.connection.request(method, path, body=data, headers={"Content-Type": content_type})
        response = self.connection.getresponse()
        payload = response.read()
        return response.status, json.loads(payload) if payload else None

    def close(self) -> None:
        self.connection.close()


class Watcher:
    """Lists the objects, then watches them from the list's version; every object seen goes to ``observe``.

    A stream that ends (its timeout, or the server letting a slow watcher go) is resumed from the last
    version seen, and a version too old to resume (410 Expired) means a fresh list: as any Kubernetes
    client keeps its view, so that a long run at 10,000 objects never waits for a result it has missed.
    """

    def __init__(self, server: Server, observe: Callable[[dict[str, Any], float], None]) -> None:
        self._server = server
        self._observe = observe
        self._stopping = threading.Event()
        self._connection: http.client.HTTPConnection | None = None
        self.streams = 0
        self.relists = 0
        self._version = self._list()
        self._response = self._open(self._version)
        self._thread = threading.Thread(target=self._read, name="watcher", daemon=True)
        self._thread.start()

    def _list(self) -> str:
        client = Client(self._server)
        try:
            status, listing = client.request("GET", COLLECTION)
        finally:
            client.close()
        if status != 200:
            raise RuntimeError(f"Cannot list the objects: {status} {listing}")
        now = time.time()
        for item in listing["items"]:
            self._observe(item, now)
        return str(listing["metadata"]["resourceVersion"])

    def _open(self, version: str) -> http.client.HTTPResponse:
        self._connection = self._server.connect(timeout=None)
        query = f"watch=true&allowWatchBookmarks=true&resourceVersion={version}&timeoutSeconds=3600"
        self._connection.request("GET", f"{COLLECTION}?{query}")
        self.streams += 1
        return self._connection.getresponse()

    def _read(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(OSError, ValueError, AttributeError, http.client.HTTPException):
                self._follow(self._response)
            if self._stopping.is_set():
                return
            with contextlib.suppress(OSError, http.client.HTTPException):
                if self._connection is not None:
                    self._connection.close()
                self._response = self._open(self._version)
                continue
            self._stopping.wait(0.5)  # the server is too busy to answer: soon again

    def _follow(self, response: http.client.HTTPResponse) -> None:
        while line := response.readline():
            event = json.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:  # too old to resume: a fresh view
                    self.relists += 1
                    self._version = self._list()
                return
            self._version = str(obj.get("metadata", {}).get("resourceVersion") or self._version)
            if kind in ("ADDED", "MODIFIED"):
                self._observe(obj, time.time())

    def stop(self) -> None:
        self._stopping.set()
        connection = self._connection
        if connection is not None:
            with contextlib.suppress(OSError):
                if connection.sock is not None:
                    connection.sock.shutdown(2)
            connection.close()
        self._thread.join(5)


#: More environment of the operators (from the command line: e.g. ``--no-log-events``).
OPERATOR_ENV: dict[str, str] = {}


class Operator:
    """``kopf run`` of an operator file under one framework, as a subprocess (its log in the workdir)."""

    def __init__(self, framework: Framework, file: str, server: Server, workdir: pathlib.Path) -> None:
        self.first_call_path = workdir / f"{framework.name}-first-call"
        # As installed: the bytecode is cached (pip compiles the peer's at install; ours, a checkout, on first use).
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
        }
        env.update(KUBECONFIG=str(server.kubeconfig), BENCH_FIRST_CALL=str(self.first_call_path), **OPERATOR_ENV)
        self._log = open(workdir / f"{framework.name}-operator.log", "w")  # noqa: SIM115 - closed in stop()
        args = [str(framework.kopf), "run", "--standalone", "--namespace", "default", str(OPERATORS / file)]
        self.spawned = time.time()
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=str(workdir))

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def peak_rss_mib(self) -> float:
        return memory_kib(self.pid, "VmHWM") / 1024

    def first_call(self) -> float | None:
        """Seconds from the spawn to the first handler call (as the handler has written it)."""
        try:
            return float(self.first_call_path.read_text()) - self.spawned
        except (OSError, ValueError):
            return None

    def settle(self, quiet: float = 0.5, limit: float = 10.0) -> None:
        """Wait until the operator burns no CPU for a while (its last patches' echoes are processed)."""
        deadline = time.monotonic() + limit
        last = self.cpu()
        while time.monotonic() < deadline:
            time.sleep(quiet)
            now = self.cpu()
            if now - last < 0.02:
                return
            last = now

    def stop(self) -> tuple[float, int | None]:
        """SIGTERM; the seconds until the exit, and the exit code (``None`` if it hung and was killed)."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code: int | None = self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = None
        seconds = time.monotonic() - started
        self._log.close()
        return seconds, code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


class Reached:
    """Which objects have reached a state (by a predicate on their bodies), and when the last one did."""

    def __init__(self, total: int, predicate: Callable[[dict[str, Any]], bool]) -> None:
        self.total = total
        self._predicate = predicate
        self._names: set[str] = set()
        self._lock = threading.Lock()
        self.done = threading.Event()
        self.first: float | None = None
        self.when: float | None = None

    def observe(self, body: dict[str, Any], now: float) -> None:
        if not self._predicate(body):
            return
        with self._lock:
            self._names.add(body["metadata"]["name"])
            if self.first is None:
                self.first = now
            if len(self._names) >= self.total and not self.done.is_set():
                self.when = now
                self.done.set()

    @property
    def count(self) -> int:
        return len(self._names)


def _in_status(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda body: bool((body.get("status") or {}).get(key))


@contextlib.contextmanager
def _workdir(label: str) -> Iterator[pathlib.Path]:
    with tempfile.TemporaryDirectory(prefix=f"compare-peer-{label}-") as path:
        yield pathlib.Path(path)


def _fail(what: str, operator: Operator, workdir: pathlib.Path, framework: Framework) -> RuntimeError:
    log = (workdir / f"{framework.name}-operator.log").read_text()[-3000:]
    return RuntimeError(f"{framework.name}: {what}; the operator's last output:\n{log}")


# -------------------------------------------------------------------------------------------------
# The measurements of one framework.
# -------------------------------------------------------------------------------------------------


def measure_throughput(framework: Framework, size: int, timeout: float) -> dict[str, float | None]:
    """A create handler over N pre-existing objects: speed, CPU, memory, start & stop."""
    with _workdir(f"{framework.name}-a{size}") as workdir:
        server = Server(workdir, size)
        try:
            reached = Reached(size, _in_status("create_fn"))
            watcher = Watcher(server, reached.observe)
            server_cpu = server.cpu()
            operator = Operator(framework, "create.py", server, workdir)
            try:
                if not reached.done.wait(timeout):
                    raise _fail(f"{reached.count}/{size} objects handled in {timeout}s", operator, workdir, framework)
                operator_cpu = operator.cpu()
                server_cpu = server.cpu() - server_cpu
                assert reached.when is not None
                seconds = reached.when - operator.spawned
                assert reached.first is not None
                first_result = reached.first - operator.spawned
                peak = operator.peak_rss_mib()
                first = operator.first_call()
                # The work left after the last result (e.g. the echoes of the last patches; a re-listing
                # if the watch-stream fell too far behind): counted until the operator is idle.
                operator.settle(limit=60.0)
                idle_cpu = operator.cpu()
                idle_peak = operator.peak_rss_mib()
                stop, code = operator.stop()
            except BaseException:
                operator.kill()
                raise
            watcher.stop()
        finally:
            server.stop()
    _report_watch(framework, watcher)
    return {
        "seconds": seconds,
        "objects_per_second": size / seconds,
        "operator_cpu_s": operator_cpu,
        "operator_cpu_ms_per_object": operator_cpu / size * 1000,
        "operator_peak_rss_mib": peak,
        "operator_cpu_ms_per_object_until_idle": idle_cpu / size * 1000,
        "operator_peak_rss_mib_until_idle": idle_peak,
        "server_cpu_share": server_cpu / seconds,
        "start_to_first_handler_s": first,
        "start_to_first_result_s": first_result,
        "stop_s": stop,
        "exit_code": code,
    }


def measure_latency(framework: Framework, objects: int, rate: float, duration: float) -> dict[str, float | None]:
    """A steady rate of spec patches: the latency from each write to its handler's call & patch."""
    with _workdir(f"{framework.name}-b") as workdir:
        server = Server(workdir, objects)
        try:
            created = Reached(objects, _in_status("create_fn"))
            seen: dict[float, tuple[float, float]] = {}  # stamp -> (patch seen, handler called)
            lock = threading.Lock()

            def observe(body: dict[str, Any], now: float) -> None:
                created.observe(body, now)
                for value in (body.get("status") or {}).values():
                    if isinstance(value, dict) and isinstance(value.get("stamp"), float):
                        with lock:
                            seen.setdefault(value["stamp"], (now, float(value.get("called") or now)))

            watcher = Watcher(server, observe)
            operator = Operator(framework, "update.py", server, workdir)
            try:
                if not created.done.wait(120):
                    raise _fail("the objects are not created in 120s", operator, workdir, framework)
                operator.settle()
                cpu_before, server_before = operator.cpu(), server.cpu()
                stamps = _write_steadily(server, objects=objects, rate=rate, duration=duration)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    with lock:
                        if all(stamp in seen for stamp in stamps):
                            break
                    time.sleep(0.1)
                operator_cpu, server_cpu = operator.cpu() - cpu_before, server.cpu() - server_before
                operator.stop()
            except BaseException:
                operator.kill()
                raise
            watcher.stop()
        finally:
            server.stop()
    with lock:
        to_patch = sorted(seen[stamp][0] - stamp for stamp in stamps if stamp in seen)
        to_call = sorted(seen[stamp][1] - stamp for stamp in stamps if stamp in seen)
    if not to_patch:
        raise RuntimeError(f"{framework.name}: no update was handled")
    return {
        "writes": len(stamps),
        "handled_share": len(to_patch) / len(stamps),
        "p50_write_to_patch_ms": _percentile(to_patch, 50) * 1000,
        "p99_write_to_patch_ms": _percentile(to_patch, 99) * 1000,
        "p50_write_to_call_ms": _percentile(to_call, 50) * 1000,
        "p99_write_to_call_ms": _percentile(to_call, 99) * 1000,
        "operator_cpu_ms_per_update": operator_cpu / len(stamps) * 1000,
        "server_cpu_share": server_cpu / duration,
    }


def _write_steadily(server: Server, *, objects: int, rate: float, duration: float) -> list[float]:
    """Merge-patch ``spec.stamp`` with the wall clock, round-robin over the objects, at a steady rate."""
    client = Client(server)
    stamps: list[float] = []
    start = time.monotonic()
    try:
        for index in range(int(rate * duration)):
            delay = start + index / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            stamp = time.time()
            status, answer = client.request(
                "PATCH",
                f"{COLLECTION}/kex-{index % objects:05d}",
                {"spec": {"stamp": stamp}},
                "application/merge-patch+json",
            )
            if status != 200:
                raise RuntimeError(f"A write has failed: {status} {answer}")
            stamps.append(stamp)
    finally:
        client.close()
    return stamps


def _percentile(values: Sequence[float], percent: float) -> float:
    index = min(len(values) - 1, max(0, round(percent / 100 * len(values)) - 1))
    return values[index]


def measure_memory(framework: Framework, size: int, timeout: float, linger: float) -> dict[str, float | None]:
    """A timer on every object: the operator's peak RSS once all have ticked (and while they keep ticking)."""
    with _workdir(f"{framework.name}-c{size}") as workdir:
        server = Server(workdir, size)
        try:
            reached = Reached(size, _in_status("tick_fn"))
            watcher = Watcher(server, reached.observe)
            server_cpu = server.cpu()
            operator = Operator(framework, "timer.py", server, workdir)
            try:
                if not reached.done.wait(timeout):
                    raise _fail(f"{reached.count}/{size} objects ticked in {timeout}s", operator, workdir, framework)
                assert reached.when is not None
                seconds = reached.when - operator.spawned
                server_cpu = server.cpu() - server_cpu
                time.sleep(linger)
                peak = operator.peak_rss_mib()
                rss = memory_kib(operator.pid, "VmRSS") / 1024
                cpu = operator.cpu()
                operator.stop()
            except BaseException:
                operator.kill()
                raise
            watcher.stop()
        finally:
            server.stop()
    _report_watch(framework, watcher)
    return {
        "seconds": seconds,
        "peak_rss_mib": peak,
        "rss_mib": rss,
        "operator_cpu_s": cpu,
        "server_cpu_share": server_cpu / seconds,
    }


def _report_watch(framework: Framework, watcher: Watcher) -> None:
    """Say if the benchmark's own watch was resumed (the server lets a watcher that lags too far go)."""
    if watcher.streams > 1 or watcher.relists:
        print(
            f"    {framework.name}: the benchmark's watch was resumed {watcher.streams - 1} times, "
            f"relisted {watcher.relists} times",
            file=sys.stderr,
            flush=True,
        )


# -------------------------------------------------------------------------------------------------
# Side by side: turns, repeats, the table.
# -------------------------------------------------------------------------------------------------

Results = dict[str, dict[str, list[float | None]]]  # figure -> framework -> values of the repeats


def side_by_side(
    label: str,
    repeat: int,
    fws: Mapping[str, Framework],
    measure: Callable[[Framework], Mapping[str, float | None]],
    results: Results,
) -> None:
    for round_ in range(repeat):
        names = [name for name in (*ORDER, "base") if name in fws]
        order = names if round_ % 2 == 0 else list(reversed(names))
        for name in order:
            print(f"  {label}: {name}, round {round_ + 1}/{repeat} ...", file=sys.stderr, flush=True)
            figures = measure(fws[name])
            for key, value in figures.items():
                results.setdefault(f"{label}: {key}", {}).setdefault(name, []).append(value)


def print_table(results: Results) -> None:
    with_base = any("base" in by_name for by_name in results.values())
    extra_head = f" {'base':>19} | {'ours/base':>15} |" if with_base else ""
    extra_rule = f"{'-' * 21}:|{'-' * 17}:|" if with_base else ""
    print(f"| {'figure':<58} | {'peer':>19} | {'ours':>19} | {'ours/peer':>15} |{extra_head}")
    print(f"|{'-' * 60}|{'-' * 21}:|{'-' * 21}:|{'-' * 17}:|{extra_rule}")
    for figure, by_name in results.items():
        peer, ours, base = by_name.get("peer", []), by_name.get("ours", []), by_name.get("base", [])
        extra = f" {_summary(base):>19} | {_ratio(ours, base):>15} |" if with_base else ""
        print(f"| {figure:<58} | {_summary(peer):>19} | {_summary(ours):>19} | {_ratio(ours, peer):>15} |{extra}")


def _ratio(ours: Sequence[float | None], other: Sequence[float | None]) -> str:
    ratios = [o / p for o, p in zip(ours, other, strict=False) if o is not None and p]
    ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
    if len(ratios) > 1:
        ratio += f" ({min(ratios):.2f}-{max(ratios):.2f})"
    return ratio


def _summary(values: Sequence[float | None]) -> str:
    numbers = [value for value in values if value is not None]
    if not numbers:
        return "-"
    median = statistics.median(numbers)
    if len(numbers) == 1:
        return f"{median:.4g}"
    return f"{median:.4g} ({min(numbers):.3g}-{max(numbers):.3g})"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--only",
        default="throughput,latency,memory",
        help="Which parts: throughput (with start & stop), latency, memory.",
    )
    parser.add_argument("--sizes", default="1000,10000", help="The numbers of pre-existing objects.")
    parser.add_argument("--repeat", type=int, default=3, help="Rounds of the throughput (others: --repeat-other).")
    parser.add_argument("--repeat-other", type=int, default=1, help="Rounds of the latency and memory parts.")
    parser.add_argument("--rate", type=float, default=200.0, help="Updates per second in the latency part.")
    parser.add_argument("--duration", type=float, default=30.0, help="Seconds of updates in the latency part.")
    parser.add_argument("--latency-objects", type=int, default=200, help="Objects updated round-robin.")
    parser.add_argument("--timeout", type=float, default=600.0, help="Seconds for one framework's run.")
    parser.add_argument("--json", dest="json_path", default=None, help="Also write the raw figures there.")
    parser.add_argument(
        "--no-log-events",
        action="store_true",
        help="Neither framework posts the objects' log messages as k8s-events (ours does by default, the peer not).",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help="Another kopf command to run too (e.g. main's venv/bin/kopf): before/after a change, in one run.",
    )
    args = parser.parse_args(argv)
    parts = {part.strip() for part in args.only.split(",") if part.strip()}
    if args.no_log_events:
        OPERATOR_ENV["BENCH_LOG_EVENTS"] = "0"
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    fws = frameworks(args.baseline)
    results: Results = {}
    for size in sizes if "throughput" in parts else []:
        side_by_side(
            f"(a) {size} objects, create",
            args.repeat,
            fws,
            lambda fw, size=size: measure_throughput(fw, size, args.timeout),
            results,
        )  # type: ignore[misc]
    if "latency" in parts:
        side_by_side(
            f"(b) {args.rate:g} updates/s",
            args.repeat_other,
            fws,
            lambda fw: measure_latency(fw, args.latency_objects, args.rate, args.duration),
            results,
        )
    for size in sizes if "memory" in parts else []:
        side_by_side(
            f"(c) {size} objects, timer",
            args.repeat_other,
            fws,
            lambda fw, size=size: measure_memory(fw, size, args.timeout, 5.0),
            results,
        )  # type: ignore[misc]
    print_table(results)
    if args.json_path:
        pathlib.Path(args.json_path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
