"""Errors and retries: temporary (with a delay), permanent, arbitrary (retried, then given up), ignored."""

from compat_record import record

import kopf


@kopf.on.create("kopfexamples", id="temporary", backoff=1)
def temporary(name, retry, **_):
    record("temporary", name, retry=retry)
    if retry < 2:
        raise kopf.TemporaryError(f"Not yet: attempt {retry}.", delay=1)
    return "fine at last"


@kopf.on.create("kopfexamples", id="permanent")
def permanent(name, retry, **_):
    record("permanent", name, retry=retry)
    raise kopf.PermanentError("This will never work.")


@kopf.on.create("kopfexamples", id="arbitrary", retries=2, backoff=1)
def arbitrary(name, retry, **_):
    record("arbitrary", name, retry=retry)
    raise ValueError(f"Broken: attempt {retry}.")


@kopf.on.create("kopfexamples", id="ignored", errors=kopf.ErrorsMode.IGNORED)
def ignored(name, retry, **_):
    record("ignored", name, retry=retry)
    raise RuntimeError("Ignore me.")


# The timeouts count from the cause's start; the margins are wide for the frameworks' different speeds.
@kopf.on.create("kopfexamples", id="timing-out", timeout=3, backoff=1)
def timing_out(name, retry, **_):
    record("timing-out", name, retry=retry)
    raise kopf.TemporaryError("Slow.", delay=2)


@kopf.on.update("kopfexamples", id="default-backoff")
def default_backoff(name, retry, **_):
    record("default-backoff", name, retry=retry)
    if retry == 0:
        raise ValueError("Once.")  # retried after settings.execution.default_backoff
    return "retried"


@kopf.on.startup()
def configure(settings, **_):
    settings.execution.default_backoff = 1


@kopf.on.create("kopfexamples", id="temporary-retries", retries=2, backoff=1)
def temporary_retries(name, retry, **_):
    record("temporary-retries", name, retry=retry)
    raise kopf.TemporaryError("Again.", delay=1)


@kopf.on.create("kopfexamples", id="arbitrary-timeout", timeout=3, backoff=2)
def arbitrary_timeout(name, retry, **_):
    record("arbitrary-timeout", name, retry=retry)
    raise ValueError("Slow and broken.")


@kopf.on.create("kopfexamples", id="arbitrary-permanent", errors=kopf.ErrorsMode.PERMANENT)
def arbitrary_permanent(name, retry, **_):
    record("arbitrary-permanent", name, retry=retry)
    raise ValueError("Broken for good.")


@kopf.on.startup(id="flaky-startup", backoff=0.5)
def flaky_startup(retry, **_):
    record("flaky-startup", retry=retry)
    if retry == 0:
        raise ValueError("Not ready yet.")
