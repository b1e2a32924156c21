"""Filters: labels & annotations (values, PRESENT, ABSENT, callbacks), when=, field=/value=, field handlers."""

from compat_record import record

import kopf


@kopf.on.create("kopfexamples", labels={"match": "yes"})
def by_label(name, **_):
    record("by_label", name)


@kopf.on.create("kopfexamples", labels={"match": kopf.PRESENT}, annotations={"skip": kopf.ABSENT})
def by_presence(name, **_):
    record("by_presence", name)


@kopf.on.create("kopfexamples", labels={"match": lambda value, **_: (value or "").startswith("y")})
def by_callback(name, **_):
    record("by_callback", name)


@kopf.on.create("kopfexamples", when=lambda spec, **_: spec.get("size", 0) > 2)
def by_when(name, **_):
    record("by_when", name)


@kopf.on.create("kopfexamples", field="spec.field", value="special")
def by_value(name, **_):
    record("by_value", name)


@kopf.on.field("kopfexamples", field="spec.field")
def field_fn(name, old, new, diff, reason, **_):
    record("field_fn", name, old=old, new=new, diff=list(diff), reason=reason)
    return {"seen": new}


@kopf.on.update("kopfexamples", field="spec.size", old=2, new=kopf.PRESENT)
def size_from_two(name, old, new, **_):
    record("size_from_two", name, old=old, new=new)


@kopf.on.event("kopfexamples", labels={"match": "yes"})
def event_fn(name, type, **_):
    if type in ("ADDED", None):  # only the first sight: the later events depend on the timing
        record("event_fn", name, type=type)


def _explode(name, **_):
    if name == "f-boom":
        raise ZeroDivisionError("A broken filter.")  # the framework's throttling of the unexpected errors
    return False


@kopf.on.create("kopfexamples", when=_explode)
def never(name, **_):
    record("never", name)
