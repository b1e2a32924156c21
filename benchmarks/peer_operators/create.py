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
