"""An update handler echoing the stamp of the write (the benchmark measures the write-to-patch latency)."""

import os
import time

import kopf


@kopf.on.create("kopfexamples")
def create_fn(**_):
    return {"created": True}


@kopf.on.update("kopfexamples", field="spec.stamp")
def update_fn(new, **_):
    return {"stamp": new, "called": time.time()}


@kopf.on.startup()
def configure(settings, **_):
    # compare_peer --no-log-events: the objects' log messages are not posted as k8s-events by either framework
    # (ours posts them by default, as the framework's documentation says; the published 1.45 does not).
    if os.environ.get("BENCH_LOG_EVENTS") == "0":
        settings.posting.loggers = False
