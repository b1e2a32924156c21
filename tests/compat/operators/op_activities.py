"""Operator-level activities: startup (settings, memo), probes, cleanup; and a custom finalizer & storages."""

import os

from compat_record import record

import kopf


@kopf.on.startup()
async def startup_fn(settings, memo, logger, **_):
    settings.persistence.finalizer = "compat.kopf.dev/finalizer"
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.compat.progress")
    settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(field="status.compat.diffbase")
    memo.counter = 0
    logger.info("Started.")
    record("startup_fn")


@kopf.on.probe(id="counter")
def counter_probe(memo, **_):
    return memo.counter


@kopf.on.create("kopfexamples")
def create_fn(name, memo, retry, **_):
    memo.counter += 1
    record("create_fn", name, counter=memo.counter, retry=retry)
    if retry == 0:
        raise kopf.TemporaryError("Progress goes to the status.", delay=0.5)
    return "created"


@kopf.on.delete("kopfexamples")
def delete_fn(name, **_):
    record("delete_fn", name)


@kopf.on.cleanup()
def cleanup_fn(memo, logger, **_):
    logger.info("Cleaning up.")
    record("cleanup_fn", counter=memo.counter)


if os.environ.get("COMPAT_FAILING_STARTUP"):

    @kopf.on.startup(id="failing-startup", errors=kopf.ErrorsMode.PERMANENT)
    def failing_startup(**_):
        record("failing-startup")
        raise kopf.PermanentError("The operator cannot start.")
