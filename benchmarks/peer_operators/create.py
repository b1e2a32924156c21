"""A create handler returning a value (its result goes to the status): throughput & start/stop."""

import os
import time

import kopf

_first_call = os.environ.get("BENCH_FIRST_CALL")


@kopf.on.create("kopfexamples")
def create_fn(name, **_):
    global _first_call
    if _first_call:  # the benchmark's start-to-first-handler figure: once, then no more file writes
        with open(_first_call, "w") as f:
            f.write(repr(time.time()))
        _first_call = None
    return {"message": f"hello, {name}"}


@kopf.on.startup()
def configure(settings, **_):
    # compare_peer --no-log-events: the objects' log messages are not posted as k8s-events by either framework
    # (ours posts them by default, as the framework's documentation says; the published 1.45 does not).
    if os.environ.get("BENCH_LOG_EVENTS") == "0":
        settings.posting.loggers = False
