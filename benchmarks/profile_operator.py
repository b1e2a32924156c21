"""
Where our operator's time and memory go, per object: the in-process companion of ``compare_peer.py``.

Run: ``python benchmarks/profile_operator.py --objects 1000`` (both parts), or one part:
``--cpu`` (cProfile of ``kopf run`` as a subprocess, the top functions by their own time; ``--save FILE``
keeps the profile for ``python -m pstats FILE``), ``--memory`` (tracemalloc of the operator in this process:
the bytes and blocks per object by the line that allocated them, and by the innermost line of kopf).
``--census 0.45,0.9`` runs the operator at full speed and takes a census of its memory at those shares of
the objects handled (see ``census.py``: by type, by the dicts' keys, and where the tasks wait).
``--at 0.3`` takes the memory snapshot when 30% of the objects are handled (the peak is mid-run: all the
objects are in flight at once), by default 2 s after all of them are. ``--operator timer.py`` picks another
file of ``benchmarks/peer_operators/``.

Both parts run against a fresh ``kopf-sim serve`` with N objects loaded at its start (as in ``compare_peer.py``).
The profiler and the tracer slow the operator down several times: compare the shares, not the seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import gc
import logging
import os
import pathlib
import pstats
import runpy
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import compare_peer

KOPF_DIR = str(pathlib.Path(__file__).resolve().parent.parent / "kopf") + os.sep


def _reached(size: int, operator: str) -> compare_peer.Reached:
    key = "tick_fn" if operator == "timer.py" else "create_fn"
    return compare_peer.Reached(size, compare_peer._in_status(key))


@dataclasses.dataclass
class _Run:
    """An operator as a subprocess against a fresh served simulator with N objects, and its progress."""

    workdir: pathlib.Path
    server: compare_peer.Server
    reached: compare_peer.Reached
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """SIGTERM, and wait for the exit (its profile or census is complete then); again: nothing."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)

    def wait_for_all(self, size: int) -> None:
        if not self.reached.done.wait(600):
            raise SystemExit(f"Only {self.reached.count}/{size} objects handled in 600 s.")


@contextlib.contextmanager
def _run_operator(size: int, operator: str, command: Callable[[pathlib.Path, list[str]], list[str]]) -> Iterator[_Run]:
    """Run ``command(workdir, kopf's arguments)`` with N objects served; stop it at the end (if not yet)."""
    with tempfile.TemporaryDirectory(prefix="profile-operator-") as path:
        workdir = pathlib.Path(path)
        server = compare_peer.Server(workdir, size)
        try:
            reached = _reached(size, operator)
            watcher = compare_peer.Watcher(server, reached.observe)
            env = dict(os.environ, KUBECONFIG=str(server.kubeconfig))
            kopf_args = ["run", "--standalone", "--namespace", "default", str(compare_peer.OPERATORS / operator)]
            with open(workdir / "operator.log", "w") as log:
                process = subprocess.Popen(command(workdir, kopf_args), env=env, stdout=log, stderr=subprocess.STDOUT)
                run = _Run(workdir=workdir, server=server, reached=reached, process=process)
                try:
                    yield run
                finally:
                    run.stop()
            watcher.stop()
        finally:
            server.stop()


def profile_cpu(size: int, operator: str, top: int, save: str | None) -> None:
    """cProfile of ``kopf run`` (a subprocess) until every object is handled; the top functions."""
    kopf = str(pathlib.Path(sys.executable).with_name("kopf"))
    outputs: list[str] = []

    def command(workdir: pathlib.Path, kopf_args: list[str]) -> list[str]:
        outputs.append(save or str(workdir / "operator.prof"))
        return [sys.executable, "-m", "cProfile", "-o", outputs[0], kopf, *kopf_args]

    started = time.monotonic()
    with _run_operator(size, operator, command) as run:
        server_cpu = run.server.cpu()
        run.wait_for_all(size)
        seconds = time.monotonic() - started
        cpu = compare_peer.cpu_seconds(run.process.pid)
        print(
            f"{size} objects in {seconds:.2f} s (profiled); operator CPU {cpu:.2f} s "
            f"({cpu / size * 1000:.2f} ms per object); server CPU share "
            f"{(run.server.cpu() - server_cpu) / seconds:.2f}"
        )
        time.sleep(1)
        run.stop()
        stats = pstats.Stats(outputs[0])
        stats.sort_stats("tottime").print_stats(top)


def profile_memory(size: int, operator: str, top: int, at: float) -> None:
    """tracemalloc of the operator in this process: the memory per object, by line."""
    import kopf  # in-process: our framework (the venv's), never the peer's

    with tempfile.TemporaryDirectory(prefix="profile-operator-") as path:
        workdir = pathlib.Path(path)
        server = compare_peer.Server(workdir, size)
        try:
            reached = _reached(size, operator)
            watcher = compare_peer.Watcher(server, reached.observe)
            os.environ["KUBECONFIG"] = str(server.kubeconfig)
            logging.basicConfig(level=logging.WARNING)
            runpy.run_path(str(compare_peer.OPERATORS / operator))
            tracemalloc.start(25)
            baseline = tracemalloc.take_snapshot()

            async def run() -> tracemalloc.Snapshot:
                stop = asyncio.Event()
                task = asyncio.create_task(kopf.operator(standalone=True, namespaces=["default"], stop_flag=stop))
                while reached.count < size * at and not reached.done.is_set():  # noqa: ASYNC110 (a thread counts)
                    await asyncio.sleep(0.05)
                if at >= 1.0:
                    await asyncio.sleep(2)
                gc.collect()
                snapshot = tracemalloc.take_snapshot()
                print(
                    f"The snapshot at {reached.count}/{size} objects handled; "
                    f"traced now/peak: {tracemalloc.get_traced_memory()[0] / 2**20:.1f}"
                    f"/{tracemalloc.get_traced_memory()[1] / 2**20:.1f} MiB"
                )
                stop.set()
                await task
                return snapshot

            snapshot = asyncio.run(run())
            watcher.stop()
        finally:
            server.stop()
    ignored = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = snapshot.filter_traces(ignored).compare_to(baseline.filter_traces(ignored), "lineno")
    total = sum(stat.size_diff for stat in diff)
    print(f"Allocated since the start: {total / 2**20:.1f} MiB, {total / size / 1024:.1f} KiB per object.")
    print("\nBy the allocating line (bytes & blocks per object):")
    for stat in diff[:top]:
        frame = stat.traceback[0]
        print(f"{stat.size_diff / size:9.0f} B {stat.count_diff / size:6.1f}  {frame.filename}:{frame.lineno}")

    by_kopf: collections.Counter[str] = collections.Counter()
    for trace in snapshot.filter_traces(ignored).traces:
        where = next(
            (
                f"{frame.filename}:{frame.lineno}"
                for frame in reversed(trace.traceback)
                if frame.filename.startswith(KOPF_DIR)
            ),
            "(outside kopf)",
        )
        by_kopf[where] += trace.size
    print("\nBy the innermost line of kopf (bytes per object, the imports included):")
    for where, size_ in by_kopf.most_common(top):
        print(f"{size_ / size:9.0f} B  {where}")


def census(size: int, operator: str, shares: Sequence[float]) -> None:
    """``kopf run`` at full speed under ``census.py``; a census of its memory at each share of objects handled."""
    census_py = str(pathlib.Path(__file__).resolve().parent / "census.py")
    reports: list[pathlib.Path] = []

    def command(workdir: pathlib.Path, kopf_args: list[str]) -> list[str]:
        reports.append(workdir / "census.txt")
        return [sys.executable, census_py, str(reports[0]), "--", *kopf_args]

    with _run_operator(size, operator, command) as run:
        for share in sorted(shares):
            while run.reached.count < size * share and not run.reached.done.is_set():
                if run.process.poll() is not None:
                    raise SystemExit(f"The operator exited early: {(run.workdir / 'operator.log').read_text()}")
                time.sleep(0.02)
            print(f"A census at {run.reached.count}/{size} objects handled.")
            run.process.send_signal(signal.SIGUSR1)
            time.sleep(0.5)
        run.wait_for_all(size)
        run.stop()
        print(reports[0].read_text() if reports[0].exists() else "No census was written.")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=1000, help="The number of pre-existing objects.")
    parser.add_argument("--operator", default="create.py", help="A file of benchmarks/peer_operators/.")
    parser.add_argument("--cpu", action="store_true", help="Only the CPU profile.")
    parser.add_argument("--memory", action="store_true", help="Only the memory profile.")
    parser.add_argument("--top", type=int, default=30, help="How many lines to print per table.")
    parser.add_argument("--save", default=None, help="Keep the CPU profile in this file.")
    parser.add_argument("--at", type=float, default=1.0, help="The share of objects handled at the snapshot.")
    parser.add_argument(
        "--census",
        default=None,
        help="Only a census of the memory at full speed (census.py), at these shares handled: e.g. 0.45,0.9.",
    )
    args = parser.parse_args(argv)
    if args.census:
        census(args.objects, args.operator, [float(share) for share in args.census.split(",") if share.strip()])
        return
    both = not args.cpu and not args.memory
    if args.cpu or both:
        profile_cpu(args.objects, args.operator, args.top, args.save)
    if args.memory or both:
        profile_memory(args.objects, args.operator, args.top, args.at)


if __name__ == "__main__":
    main()
