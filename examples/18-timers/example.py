"""Timers: a handler called on a schedule for every object, whether the object changes or not.

- ``heartbeat`` runs every ``interval`` seconds, the first time after an ``initial_delay``; it counts
  its beats in the per-object ``memo`` and logs them.
- ``sync_report`` is ``sharp``: it starts every 4 seconds sharp, however long it runs (here 1 s); a
  timer that is not sharp would wait 4 s after each run ends, so it would start every 5 s.
- ``settled`` idles: it is called only once the object has not changed for ``idle`` seconds (its
  creation counts as a change), and then every ``interval``. It returns a result (to the status) only
  when the spec is new to it, since every status write changes the object and restarts the idling.

The schedules are short so that the example can be watched in seconds.
"""

import asyncio
from typing import Any

import kopf


@kopf.timer("kopfexamples", interval=3, initial_delay=2)
def heartbeat(memo: kopf.Memo, name: str, logger: kopf.Logger, **_: Any) -> None:
    memo.beats = memo.get("beats", 0) + 1
    logger.info(f"Heartbeat #{memo.beats} of {name}.")


@kopf.timer("kopfexamples", interval=4, sharp=True)
async def sync_report(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    memo.reports = memo.get("reports", 0) + 1
    logger.info(f"Report #{memo.reports} is being sent.")
    await asyncio.sleep(1)  # e.g. sending it somewhere


@kopf.timer("kopfexamples", idle=5, interval=5)
def settled(spec: kopf.Spec, status: kopf.Status, logger: kopf.Logger, **_: Any) -> dict[str, Any] | None:
    if status.get("settled", {}).get("field") == spec.get("field"):
        return None  # nothing new: keep the status (and the object) as it is
    logger.info(f"The field has settled at {spec.get('field')!r}.")
    return {"field": spec.get("field")}
