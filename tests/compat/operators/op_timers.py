"""Timers: an interval, an initial delay, an idle period; their results go to the status."""

from compat_record import record

import kopf

_ticks = {}


@kopf.timer("kopfexamples", interval=0.5, id="ticker")
def ticker(name, **_):
    _ticks[name] = _ticks.get(name, 0) + 1
    if _ticks[name] <= 3:
        record("ticker", name, tick=_ticks[name])
    return {"ticks": min(_ticks[name], 3)}


@kopf.timer("kopfexamples", interval=0.5, initial_delay=1.0, id="delayed")
def delayed(name, **_):
    if _ticks.get(("delayed", name)) is None:
        _ticks[("delayed", name)] = 1
        record("delayed", name)


@kopf.timer("kopfexamples", interval=0.3, idle=1.0, id="idle")
def idle(name, spec, **_):
    if _ticks.get(("idle", name)) != spec.get("field"):
        _ticks[("idle", name)] = spec.get("field")
        record("idle", name, field=spec.get("field"))


@kopf.timer("kopfexamples", interval=0.3, id="failing-timer", backoff=0.3)
def failing_timer(name, retry, **_):
    count = _ticks[("failing", name)] = _ticks.get(("failing", name), 0) + 1
    if count <= 2:
        record("failing-timer", name, count=count)
        raise kopf.TemporaryError("Tick failed.", delay=0.3)
