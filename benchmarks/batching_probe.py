"""
Which of an object's close events an operator handles, and how soon: both frameworks side by side, as black boxes.

Run: ``python benchmarks/batching_probe.py`` (``--handler-seconds 0.05``: a slow handler; ``--batch-window 0.5``:
the operators' ``settings.batching.batch_window``; ``--baseline PATH``: another kopf command too).

One object; after its creation is handled, groups of merge-patches of ``spec.stamp``, the patches of a group
the given milliseconds apart, the groups a second apart (default: five 1 ms apart, then three 10, 30, 60 and
150 ms apart). The operator (``peer_operators/stamps.py``) appends every value that its update handler gets,
with the time; printed: for every write, whether it was handled and how many milliseconds after the write.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time
from collections.abc import Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from compare_peer import OPERATOR_ENV, Client, Framework, Operator, Server, frameworks

GROUPS = ((5, 0.001), (3, 0.010), (3, 0.030), (3, 0.060), (3, 0.150))
PATH = "/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex-00000"


def probe(framework: Framework, *, handler_seconds: float, batch_window: float | None) -> list[str]:
    """The lines of the report for one framework."""
    with tempfile.TemporaryDirectory(prefix=f"batching-{framework.name}-") as tmp:
        workdir = pathlib.Path(tmp)
        stamps = workdir / "stamps"
        server = Server(workdir, 1)
        OPERATOR_ENV.clear()
        OPERATOR_ENV.update(BENCH_STAMPS=str(stamps), BENCH_HANDLER_SECONDS=str(handler_seconds))
        if batch_window is not None:
            OPERATOR_ENV["BENCH_BATCH_WINDOW"] = str(batch_window)
        operator = Operator(framework, "stamps.py", server, workdir)
        client = Client(server)
        try:
            _wait_for_creation(client)
            writes = _write_groups(client)
        finally:
            client.close()
            operator.stop()
            server.stop()
        calls = dict(_read_stamps(stamps))
    lines = [f"{framework.name}: {len(calls)} of {len(writes)} writes handled"]
    for stamp, (group, written) in sorted(writes.items()):
        handled = calls.get(stamp)
        after = f"{1000 * (handled - written):7.1f} ms after its write" if handled is not None else "      - (skipped)"
        lines.append(f"  group {group}, write {stamp:2d}: {after}")
    return lines


def _wait_for_creation(client: Client) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, body = client.request("GET", PATH)
        if isinstance(body, dict) and (body.get("status") or {}).get("create_fn"):
            time.sleep(0.5)  # the echoes of the creation's patches are processed too
            return
        time.sleep(0.05)
    raise RuntimeError("The operator has not handled the object's creation within 60 s.")


def _write_groups(client: Client) -> dict[int, tuple[int, float]]:
    writes: dict[int, tuple[int, float]] = {}
    stamp = 0
    for group, (count, gap) in enumerate(GROUPS, start=1):
        for index in range(count):
            if index:
                time.sleep(gap)
            stamp += 1
            writes[stamp] = (group, time.time())
            client.request("PATCH", PATH, {"spec": {"stamp": stamp}}, "application/merge-patch+json")
        time.sleep(1.0)
    return writes


def _read_stamps(path: pathlib.Path) -> list[tuple[int, float]]:
    if not path.exists():
        return []
    return [(int(value), float(moment)) for value, moment in (line.split() for line in path.read_text().splitlines())]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--handler-seconds", type=float, default=0.0, help="How long the handler takes.")
    parser.add_argument("--batch-window", type=float, default=None, help="settings.batching.batch_window.")
    parser.add_argument("--baseline", default=None, help="Another kopf command to probe too.")
    args = parser.parse_args(argv)
    for framework in frameworks(args.baseline).values():
        lines = probe(framework, handler_seconds=args.handler_seconds, batch_window=args.batch_window)
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
