"""The memory a long-running simulated cluster keeps for its watch history, with and without the bound.

Run: ``python benchmarks/bench_history.py [--changes 100000] [--window N]``.

A fresh cluster in a fresh process (so that the figures are this run's only) changes one object per
write, as a busy operator would (a status patch with a counter and a timestamp), ``--changes`` times,
and reports the process's resident memory before and after, in MB. The history keeps one version
per change up to the window (``Cluster(history_window=...)``, the etcd-compaction-like bound): beyond
it, the oldest changes are forgotten and watches or continue tokens older than them get 410 Expired.
Without ``--window``, the default bound and an unbounded-like window (the number of changes) are
both measured, each in its own subprocess.
"""

from __future__ import annotations

import argparse
import subprocess
import sys


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 1024 / 1024


def measure(changes: int, window: int | None) -> None:
    from kopf_sim.store.cluster import Cluster

    cluster = Cluster() if window is None else Cluster(history_window=window)
    configmaps = cluster.resource("", "v1", "configmaps")
    cluster.create(
        configmaps,
        "default",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "busy", "labels": {"app": "bench"}},
            "data": {f"key{i}": "x" * 40 for i in range(20)},
        },
    )
    before = rss_mb()
    for index in range(changes):
        cluster.patch(
            configmaps,
            "default",
            "busy",
            {"data": {"counter": str(index), "stamp": cluster.now()}},
            "application/merge-patch+json",
        )
    after = rss_mb()
    print(
        f"window={cluster.history_window:>7}: {changes} changes: RSS {before:.1f} MB -> {after:.1f} MB "
        f"(+{after - before:.1f} MB); history kept: {len(cluster.history)} changes, "
        f"older versions expire (410) below {cluster.compacted_rv}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=None, help="measure this window only (in this process)")
    args = parser.parse_args()
    if args.window is not None:
        measure(args.changes, args.window if args.window > 0 else None)
        return
    for window in (0, args.changes):  # 0: the default bound
        subprocess.run([sys.executable, __file__, "--changes", str(args.changes), "--window", str(window)], check=True)


if __name__ == "__main__":
    main()
