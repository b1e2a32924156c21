"""A timer on every object: the memory of the framework per object with a timer running."""

import os

import kopf


@kopf.timer("kopfexamples", interval=60.0)
def tick_fn(**_):
    return {"ticked": True}


@kopf.on.startup()
def configure(settings, **_):
    # compare_peer --no-log-events: the objects' log messages are not posted as k8s-events by either framework
    # (ours posts them by default, as the framework's documentation says; the published 1.45 does not).
    if os.environ.get("BENCH_LOG_EVENTS") == "0":
        settings.posting.loggers = False
