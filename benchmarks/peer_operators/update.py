"""An update handler echoing the stamp of the write (the benchmark measures the write-to-patch latency)."""

import time

import kopf


@kopf.on.create("kopfexamples")
def create_fn(**_):
    return {"created": True}


@kopf.on.update("kopfexamples", field="spec.stamp")
def update_fn(new, **_):
    return {"stamp": new, "called": time.time()}
