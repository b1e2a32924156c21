"""The long fuzzing profile: hostile and careless requests against a served simulator, and kopf's webhook server.

Run: ``python benchmarks/fuzz_sim.py [--examples 5000] [--seed 0] [--webhooks 2000]``.

The checks are those of ``tests/sim/test_fuzz_http.py`` and ``tests/kopf/test_webhook_fuzz.py`` (which run
a bounded profile in CI): no 5xx, no request costing more than a second of the server's CPU, errors as
``kind: Status``, the store unchanged after every 4xx, and the process's memory bounded. Prints the number
of requests tried, the seconds spent, the statuses seen, the costliest request, and the memory before and
after; exits non-zero on the first failure (hypothesis shrinks it and prints it).
"""

from __future__ import annotations

import argparse
import collections
import gc
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000, help="generated requests to the simulator")
    parser.add_argument("--webhooks", type=int, default=2000, help="generated requests to the webhook server")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from hypothesis import HealthCheck, given, seed, settings

    from tests.kopf.test_webhook_fuzz import ServedWebhooks, check_review_outcome, reviews_requests
    from tests.sim.hostile import ServedSim, hand_written, requests
    from tests.sim.test_fuzz_http import check, rss_mb

    statuses: collections.Counter[int] = collections.Counter()
    costliest: list[tuple[float, str]] = [(0.0, "")]
    options = settings(
        max_examples=args.examples, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    started, rss_before = time.perf_counter(), rss_mb()
    with ServedSim() as sim:
        for request in hand_written():
            outcome = sim.send(request)
            check(request, outcome)
            statuses[outcome.status] += 1

        @seed(args.seed)
        @options
        @given(request=requests())
        def fuzz(request: object) -> None:
            outcome = sim.send(request)  # type: ignore[arg-type]
            statuses[outcome.status] += 1
            if outcome.cpu_seconds > costliest[0][0]:
                costliest[0] = (outcome.cpu_seconds, request.describe()[:160])  # type: ignore[attr-defined]
            check(request, outcome)  # type: ignore[arg-type]

        fuzz()
        tried = sim.requests
        elapsed = time.perf_counter() - started
        rss_after = rss_mb()
        # A steady state: the same hostile requests again and again must not grow the process any more
        # (what grew above is mostly hypothesis' own engine, and the allocator keeping freed peaks).
        for _ in range(5):
            for request in hand_written():
                check(request, sim.send(request))
        gc.collect()
        steady = rss_mb()
        objects, history = sim.cluster.count(), len(sim.cluster.history)
    print(
        f"simulator: {tried} requests in {elapsed:.1f} s ({tried / elapsed:.0f}/s); statuses: "
        f"{dict(sorted(statuses.items()))}; RSS {rss_before:.0f} -> {rss_after:.0f} MB; then "
        f"{5 * len(hand_written())} hostile requests more: {steady:.0f} MB; the store: {objects} objects, "
        f"{history} changes in its history"
    )
    print(f"simulator: the costliest request took {costliest[0][0] * 1000:.1f} ms of CPU: {costliest[0][1]}")

    webhook_statuses: collections.Counter[int] = collections.Counter()
    started = time.perf_counter()
    with ServedWebhooks() as hooks:

        @seed(args.seed)
        @settings(max_examples=args.webhooks, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(request=reviews_requests())
        def fuzz_webhooks(request: object) -> None:
            outcome = hooks.send(request)  # type: ignore[arg-type]
            webhook_statuses[outcome.status] += 1
            check_review_outcome(request, outcome)  # type: ignore[arg-type]

        fuzz_webhooks()
        tried = hooks.requests
    elapsed = time.perf_counter() - started
    print(
        f"webhooks: {tried} requests in {elapsed:.1f} s; statuses: {dict(sorted(webhook_statuses.items()))}; "
        f"RSS now {rss_mb():.0f} MB"
    )


if __name__ == "__main__":
    main()
