"""Operator-level activities: startup, cleanup, login and probes, sharing state through the operator's memo.

- ``open_inventory`` (startup) runs before the operator talks to the cluster: it tunes the settings and
  puts an inventory (a dict) and a lock into the operator's ``memo``. Each object's ``memo`` is a
  shallow copy of it, so all the objects' handlers share that one dict and that one lock (the lock is
  made here, inside the operator's event loop, not at import time).
- ``login`` replaces the default authentication (which tries the installed client libraries too): the
  pod's service account in a cluster, else the kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``).
- ``add_to_inventory``/``remove_from_inventory`` keep the inventory current.
- ``inventory`` is a probe: ``kopf run --liveness=http://127.0.0.1:8080/healthz`` serves its result.
- ``close_inventory`` (cleanup) runs when the operator exits (Ctrl+C, SIGTERM, or its stop flag).
"""

import asyncio
from typing import Any

import kopf


@kopf.on.startup()
async def open_inventory(settings: kopf.OperatorSettings, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    settings.execution.max_workers = 4  # threads for the sync handlers
    settings.posting.level = 30  # only warnings and errors become k8s events (logging.WARNING)
    memo.inventory = {}
    memo.lock = asyncio.Lock()
    logger.info("The inventory is open.")


@kopf.on.login()
def login(logger: kopf.Logger, **kwargs: Any) -> kopf.ConnectionInfo | None:
    info = kopf.login_with_service_account(logger=logger, **kwargs) or kopf.login_with_kubeconfig(
        logger=logger, **kwargs
    )
    if info is not None:
        logger.info(f"Logged in to {info.server}.")
    return info


@kopf.on.resume("kopfexamples")
@kopf.on.create("kopfexamples")
async def add_to_inventory(memo: kopf.Memo, namespace: str, name: str, spec: kopf.Spec, **_: Any) -> None:
    async with memo.lock:
        memo.inventory[f"{namespace}/{name}"] = spec.get("field")


@kopf.on.delete("kopfexamples")
async def remove_from_inventory(memo: kopf.Memo, namespace: str, name: str, **_: Any) -> None:
    async with memo.lock:
        memo.inventory.pop(f"{namespace}/{name}", None)


@kopf.on.probe(id="inventory")
def inventory_size(memo: kopf.Memo, **_: Any) -> int:
    return len(memo.inventory)


@kopf.on.cleanup()
async def close_inventory(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    logger.info(f"The inventory is closed with {len(memo.inventory)} objects: {sorted(memo.inventory)}.")
