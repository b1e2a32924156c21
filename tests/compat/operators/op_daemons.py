"""Daemons, sync and async: started per object, stopped on deletion (and on the operator's exit)."""

import asyncio

from compat_record import record

import kopf

_MAIN_REASONS = ("RESOURCE_DELETED", "OPERATOR_EXITING", "FILTERS_MISMATCH", "OPERATOR_PAUSING")


def _why(stopped):
    """The main reasons only: the forced/abandoned flags depend on how fast the thread exits (a race)."""
    return sorted(name for name in _MAIN_REASONS if name in str(stopped.reason))


@kopf.daemon("kopfexamples", cancellation_polling=0.2, cancellation_timeout=5)
async def async_daemon(name, stopped, retry, **_):
    record("async_daemon", name, event="started", retry=retry)
    while not stopped:
        await stopped.wait(0.2)
    record("async_daemon", name, event="stopped", reason=_why(stopped))


@kopf.daemon("kopfexamples", cancellation_polling=0.2)  # no forced stage: it would race with the thread's exit
def sync_daemon(name, stopped, logger, **_):
    record("sync_daemon", name, event="started")
    logger.info("The sync daemon is running.")
    while not stopped.wait(0.2):
        pass
    record("sync_daemon", name, event="stopped", reason=_why(stopped))


@kopf.daemon("kopfexamples", id="finite", cancellation_polling=0.2)
async def finite(name, **_):
    record("finite", name)
    await asyncio.sleep(0.1)
    return "finished"  # exits by itself: not restarted


@kopf.daemon("kopfexamples", id="failing", retries=2, backoff=0.3, cancellation_polling=0.2)
async def failing(name, retry, **_):
    record("failing", name, retry=retry)
    raise ValueError(f"Daemon failure #{retry}.")
