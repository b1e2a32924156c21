"""Daemons: a background task per object, from its creation (or the operator's start) until its deletion.

Three async daemons run for every KopfExample, and a sync one for those labelled
``example.kopf.dev/sync: "yes"``:

- ``monitor`` is cooperative: it checks its ``stopped`` flag and sleeps with ``await stopped.wait(...)``,
  which ends early when the daemon is asked to stop (the object is deleted, the operator exits).
  ``spec`` is a live view: every sample sees the object's current content.
- ``keep_connection`` never checks the flag; its ``cancellation_timeout`` lets the framework cancel it
  (``asyncio.CancelledError`` at its ``await``) when it must stop.
- ``countdown`` starts after an ``initial_delay``, only for objects with ``spec.countdown``, and returns:
  its result goes to the status, and a daemon that has exited is not restarted (until the operator is).
- ``sync_monitor`` runs in a thread: a sync daemon must check ``stopped`` (a thread cannot be cancelled)
  and should sleep with ``stopped.wait(...)``.
"""

import asyncio
from typing import Any

import kopf

SAMPLE_INTERVAL = 2  # seconds


@kopf.daemon("kopfexamples")
async def monitor(stopped: kopf.DaemonStopped, spec: kopf.Spec, logger: kopf.Logger, **_: Any) -> None:
    samples = 0
    while not stopped:
        samples += 1
        logger.info(f"Sample #{samples}: the field is {spec.get('field')!r}.")
        await stopped.wait(SAMPLE_INTERVAL)
    logger.info(f"The monitoring has stopped after {samples} samples ({stopped.reason.name}).")


@kopf.daemon("kopfexamples", cancellation_timeout=5)
async def keep_connection(name: str, logger: kopf.Logger, **_: Any) -> None:
    logger.info(f"A connection for {name} is open.")
    try:
        await asyncio.Event().wait()  # stands for serving a long-lived connection, forever
    except asyncio.CancelledError:
        logger.info(f"The connection for {name} is closed.")
        raise


@kopf.daemon("kopfexamples", initial_delay=1, when=lambda spec, **_: "countdown" in spec)
async def countdown(stopped: kopf.DaemonStopped, spec: kopf.Spec, logger: kopf.Logger, **_: Any) -> dict[str, Any]:
    left = int(spec["countdown"])
    while left > 0 and not stopped:
        logger.info(f"{left}...")
        left -= 1
        await stopped.wait(1)
    return {"finished": left == 0, "left": left}


@kopf.daemon("kopfexamples", labels={"example.kopf.dev/sync": "yes"})
def sync_monitor(stopped: kopf.DaemonStopped, spec: kopf.Spec, logger: kopf.Logger, **_: Any) -> None:
    samples = 0
    while not stopped:
        samples += 1
        logger.info(f"Sync sample #{samples}: the field is {spec.get('field')!r}.")
        stopped.wait(SAMPLE_INTERVAL)
    logger.info(f"The sync monitoring has stopped after {samples} samples.")
