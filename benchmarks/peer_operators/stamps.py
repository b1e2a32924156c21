"""An update handler that appends each value of ``spec.stamp`` it sees, with the time, to a file (batching_probe)."""

import os
import time

import kopf


@kopf.on.create("kopfexamples")
def create_fn(**_):
    return {"created": True}


@kopf.on.update("kopfexamples", field="spec.stamp")
def update_fn(new, **_):
    with open(os.environ["BENCH_STAMPS"], "a") as f:
        f.write(f"{new} {time.time()}\n")
    time.sleep(float(os.environ.get("BENCH_HANDLER_SECONDS", "0")))
    return {"stamp": new}


@kopf.on.startup()
def configure(settings, **_):
    settings.posting.loggers = False  # the same work in both frameworks (the published 1.45 posts none)
    if os.environ.get("BENCH_BATCH_WINDOW"):
        settings.batching.batch_window = float(os.environ["BENCH_BATCH_WINDOW"])
