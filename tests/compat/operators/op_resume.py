"""Resuming mixed into (or not) the handling cycles: after a restart mid-creation, and on re-listing."""

from compat_record import record

import kopf


@kopf.on.create("kopfexamples")
def first(name, **_):
    record("first", name)
    return "first"


@kopf.on.create("kopfexamples")
def second(name, retry, **_):
    record("second", name, retry=retry)
    if name.startswith("mid") and retry == 0:
        raise kopf.TemporaryError("Not yet.", delay=3)
    return "second"


@kopf.on.resume("kopfexamples")
def resumed(name, reason, **_):
    record("resumed", name, reason=reason)


@kopf.on.create("kopfexamples", id="both")
@kopf.on.resume("kopfexamples", id="both")
def create_or_resume(name, reason, **_):
    record("create_or_resume", name, reason=reason)
