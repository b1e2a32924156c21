"""Sub-handlers: one handler per item of a list, each retried and reported on its own.

A KopfExample lists the ``spec.items`` to provision. The creation handler declares a sub-handler per
item with ``@kopf.subhandler`` (declarative); the update handler runs the added items' provisioning with
``await kopf.execute(fns=...)`` (imperative). Either way, a sub-handler's id is its parent's id plus its
own (``provision_items/db``), its result goes to the status under that id, and its errors are retried
on their own schedule, while the finished siblings are not called again. The parent is called again on
every cycle until all its sub-handlers are done, so it only declares them: it has no side effects itself.

An item whose name starts with ``slow-`` is "not ready" twice before it succeeds.
"""

import functools
from typing import Any

import kopf

RETRY_DELAY = 1


def provision(item: str, retry: int, logger: kopf.Logger) -> dict[str, Any]:
    if item.startswith("slow-") and retry < 2:
        raise kopf.TemporaryError(f"The item {item!r} is not ready yet.", delay=RETRY_DELAY)
    logger.info(f"The item {item!r} is provisioned (attempt {retry + 1}).")
    return {"item": item, "attempts": retry + 1}


@kopf.on.create("kopfexamples")
def provision_items(spec: kopf.Spec, **_: Any) -> None:
    for item in spec.get("items", []):

        @kopf.subhandler(id=item)
        def provision_item(retry: int, logger: kopf.Logger, item: str = item, **_: Any) -> dict[str, Any]:
            return provision(item, retry, logger)


async def provision_added_item(*, item: str, retry: int, logger: kopf.Logger, **_: Any) -> dict[str, Any]:
    return provision(item, retry, logger)


@kopf.on.update("kopfexamples", field="spec.items")
async def provision_added_items(old: Any, new: Any, **_: Any) -> None:
    added = [item for item in new or [] if item not in (old or [])]
    await kopf.execute(fns={item: functools.partial(provision_added_item, item=item) for item in added})
