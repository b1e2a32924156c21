"""The kwargs that every kind of handler gets: their names, and the values that must be the same."""

from compat_record import record

import kopf


def _describe(kwargs):
    return {
        "names": sorted(kwargs),
        "reason": kwargs.get("reason"),
        "retry": kwargs.get("retry"),
        "param": kwargs.get("param"),
        "labels": dict(kwargs["labels"]) if "labels" in kwargs else None,
        "annotations": sorted(kwargs["annotations"]) if "annotations" in kwargs else None,
        "spec": dict(kwargs["spec"]) if "spec" in kwargs else None,
        "status": dict(kwargs["status"]) if "status" in kwargs else None,
        "uid_is_str": isinstance(kwargs.get("uid"), str),
        "resource": str(kwargs["resource"].plural) if "resource" in kwargs else None,
        "type": kwargs.get("type"),
        "operation": kwargs.get("operation"),
        "subresource": kwargs.get("subresource"),
        "dryrun": kwargs.get("dryrun"),
    }


@kopf.on.startup(param="startup-param")
def startup_fn(**kwargs):
    record("startup", **_describe(kwargs))


@kopf.on.login()
def login_fn(**kwargs):
    record("login", **_describe(kwargs))
    return kopf.login_via_client(**kwargs)


@kopf.on.create("kopfexamples", param=1)
def create_fn(name, **kwargs):
    record("create", name, **_describe(kwargs))


@kopf.on.update("kopfexamples", param=2)
def update_fn(name, **kwargs):
    record("update", name, **_describe(kwargs))


@kopf.on.delete("kopfexamples")
def delete_fn(name, **kwargs):
    record("delete", name, **_describe(kwargs))


@kopf.on.field("kopfexamples", field="spec.field")
def field_fn(name, **kwargs):
    record("field", name, **_describe(kwargs))


@kopf.on.event("kopfexamples")
def event_fn(name, type, **kwargs):
    if type is None or type == "ADDED":
        record("event", name, **_describe(kwargs))


_indexed = set()


@kopf.index("kopfexamples")
def index_fn(name, **kwargs):
    if name not in _indexed:  # only the first sight: the number of the later events depends on the timing
        _indexed.add(name)
        record("index", name, **_describe(kwargs))
    return name


@kopf.daemon("kopfexamples", cancellation_polling=0.2)
async def daemon_fn(name, stopped, **kwargs):
    record("daemon", name, **_describe(kwargs), stopped=bool(stopped))
    await stopped.wait()


@kopf.timer("kopfexamples", interval=60)
def timer_fn(name, **kwargs):
    record("timer", name, **_describe(kwargs))


@kopf.on.probe()
def probe_fn(**kwargs):
    return "ok"
