"""Faults placed on one request or one event of the operator: the steps of the systematic fault plans.

Each arms one fault for the ``skip + 1``-th matching request (or change) from the moment it is done: the plans
(:mod:`pytest_kopf._plans`) count, in a fault-free reference run of the same user actions, how many matching ones
come between that moment and the one to hit. As steps, they are written into reproductions like any other.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar

from ..driving import crash_after
from .steps import Action, Driver

__all__ = ["CrashAfterWrite", "ExpiredAtEvent", "FailedRequest", "HeldEvent", "StaleAnswer"]


def _exactly(path: str) -> str:
    return f"^{re.escape(path)}$"


@dataclasses.dataclass(frozen=True)
class CrashAfterWrite(Action):
    """The operator is killed right after one successful write (the ``skip + 1``-th of this method & path)."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "crash-after-writes"
    method: str
    path: str
    skip: int = 0

    async def apply(self, driver: Driver) -> str | None:
        criteria = dict(method=self.method, path=_exactly(self.path), skip=self.skip)
        crash_after(driver.cluster, driver.operator, writes=1, restart_delay=driver.restart_delay, **criteria)
        return None

    def code(self) -> str:
        return (
            f"crash_after(kopf_cluster, kopf_operator, writes=1, method={self.method!r}, "
            f"path={_exactly(self.path)!r}, skip={self.skip})"
        )


@dataclasses.dataclass(frozen=True)
class FailedRequest(Action):
    """Requests of this method & path fail, from the ``skip + 1``-th on, ``count`` of them in a row: 409 Conflict,
    429 (Retry-After: 1), 5xx; ``applied``: each is done before its answer is lost to the error."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "write-errors"
    status: int
    method: str
    path: str
    skip: int = 0
    count: int = 1
    applied: bool = False

    async def apply(self, driver: Driver) -> str | None:
        faults = driver.cluster.sim.faults
        criteria: dict[str, Any] = dict(method=self.method, path=_exactly(self.path), count=self.count, skip=self.skip)
        if self.status == 409:
            faults.conflict(**criteria)
        else:
            retry_after = 1 if self.status == 429 else None
            faults.error(self.status, retry_after=retry_after, applied=self.applied, **criteria)
        return None

    def code(self) -> str:
        criteria = f"method={self.method!r}, path={_exactly(self.path)!r}, count={self.count}, skip={self.skip}"
        if self.status == 409:
            return f"kopf_cluster.sim.faults.conflict({criteria})"
        retry = ", retry_after=1" if self.status == 429 else ""
        applied = ", applied=True" if self.applied else ""
        return f"kopf_cluster.sim.faults.error({self.status}{retry}{applied}, {criteria})"

    def simpler(self) -> list[Action]:
        return [dataclasses.replace(self, count=1)] if self.count > 1 else []


@dataclasses.dataclass(frozen=True)
class StaleAnswer(Action):
    """One read (the ``skip + 1``-th get or list of this path) is answered as it was before its latest change."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "stale-answers"
    path: str
    skip: int = 0

    async def apply(self, driver: Driver) -> str | None:
        driver.cluster.sim.faults.stale_read(1, per_object=True, path=_exactly(self.path), count=1, skip=self.skip)
        return None

    def code(self) -> str:
        return (
            f"kopf_cluster.sim.faults.stale_read(1, per_object=True, path={_exactly(self.path)!r}, count=1, "
            f"skip={self.skip})"
        )


@dataclasses.dataclass(frozen=True)
class HeldEvent(Action):
    """One object's watch event (of its ``skip + 1``-th change) held back until its next one: coalesced, or late."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "event-pairs"
    resource: str
    namespace: str | None
    name: str
    coalesce: bool
    window: float
    skip: int = 0

    async def apply(self, driver: Driver) -> str | None:
        driver.cluster.sim.faults.hold_event(
            self.resource, self.namespace, self.name, coalesce=self.coalesce, window=self.window, skip=self.skip
        )
        return None

    def code(self) -> str:
        return (
            f"kopf_cluster.sim.faults.hold_event({self.resource!r}, {self.namespace!r}, {self.name!r}, "
            f"coalesce={self.coalesce!r}, window={self.window!r}, skip={self.skip})"
        )


@dataclasses.dataclass(frozen=True)
class ExpiredAtEvent(Action):
    """The operator's watch ends with a 410 at one object's event (of its ``skip + 1``-th change), never sent: kopf
    lists again and gets the object as listed (the type ``None``), as after a broken watch whose version expired."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "relists"
    resource: str
    namespace: str | None
    name: str
    skip: int = 0

    async def apply(self, driver: Driver) -> str | None:
        driver.cluster.sim.faults.expire_at_event(self.resource, self.namespace, self.name, skip=self.skip)
        return None

    def code(self) -> str:
        return (
            f"kopf_cluster.sim.faults.expire_at_event({self.resource!r}, {self.namespace!r}, {self.name!r}, "
            f"skip={self.skip})"
        )
