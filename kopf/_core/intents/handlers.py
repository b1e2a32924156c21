"""
Declared handlers: the functions with everything that was said about them in the decorators.

One dataclass per kind of handling, since each kind is served by its own engine:
activities (operator-level), event-watching, change-detecting, daemons & timers
(resource-spawning), indexing, and admission webhooks. The values are resolved
to the documented defaults at registration, so the engines need no more defaults.
"""

import dataclasses
from collections.abc import Collection
from typing import Any, Literal

from kopf._cogs.structs import dicts
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.references import Selector
from kopf._core.actions.errors import ErrorsMode
from kopf._core.intents import callbacks
from kopf._core.intents.causes import Activity, Reason, WebhookType
from kopf._core.intents.filters import MetaFilter, ValueFilter

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
OPERATIONS: frozenset[str] = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


@dataclasses.dataclass(frozen=True)
class BaseHandler:
    """What all handlers have: the function, its id, its parameter, and the retrying options."""

    fn: callbacks.AnyCallable
    id: HandlerId
    param: Any
    errors: ErrorsMode | None
    timeout: float | None
    retries: int | None
    backoff: float | None

    def __str__(self) -> str:
        return f"Handler {self.id!r}"


@dataclasses.dataclass(frozen=True)
class ActivityHandler(BaseHandler):
    """An operator-level handler: startup, cleanup, login, probe."""

    activity: Activity | None


@dataclasses.dataclass(frozen=True)
class ResourceHandler(BaseHandler):
    """A resource-level handler: served for the resources of its selector, when the filters match."""

    selector: Selector | None  # None for sub-handlers: they inherit the parent's resource.
    labels: MetaFilter | None
    annotations: MetaFilter | None
    when: callbacks.WhenFilterFn | None
    field: dicts.FieldPath | None
    value: ValueFilter

    @property
    def requires_finalizer(self) -> bool:
        """Whether the objects must be blocked from deletion while they match this handler."""
        return False

    @property
    def change_sensitive(self) -> bool:
        """Whether the field/value filters apply to the old→new transition, not to one state."""
        return False


@dataclasses.dataclass(frozen=True)
class WatchingHandler(ResourceHandler):
    """A silent handler for every raw watch-event (``@kopf.on.event``)."""


@dataclasses.dataclass(frozen=True)
class ChangingHandler(ResourceHandler):
    """
    A change-detecting handler: creation, update, deletion, resuming, field changes.

    ``reason=None`` means any reason: used by field handlers and by sub-handlers.
    """

    reason: Reason | None
    old: ValueFilter = None
    new: ValueFilter = None
    deleted: bool = False  # for resuming handlers: also invoked for objects being deleted.
    optional: bool = False  # for deletion handlers: do not block the deletion with a finalizer.

    @property
    def requires_finalizer(self) -> bool:
        return self.reason == Reason.DELETE and not self.optional

    @property
    def change_sensitive(self) -> bool:
        return self.reason is None or self.reason == Reason.UPDATE


@dataclasses.dataclass(frozen=True)
class SpawningHandler(ResourceHandler):
    """A handler with background tasks per object: daemons and timers."""

    initial_delay: float | None

    @property
    def requires_finalizer(self) -> bool:
        return True


@dataclasses.dataclass(frozen=True)
class DaemonHandler(SpawningHandler):
    """A long-running background function per object (``@kopf.daemon``)."""

    cancellation_backoff: float | None
    cancellation_timeout: float | None
    cancellation_polling: float | None


@dataclasses.dataclass(frozen=True)
class TimerHandler(SpawningHandler):
    """A regularly scheduled function per object (``@kopf.timer``)."""

    interval: float | None
    sharp: bool
    idle: float | None


@dataclasses.dataclass(frozen=True)
class IndexingHandler(ResourceHandler):
    """An in-memory indexing function (``@kopf.index``); its id is the index name."""


@dataclasses.dataclass(frozen=True)
class WebhookHandler(ResourceHandler):
    """An admission handler (``@kopf.on.validate``/``@kopf.on.mutate``); its id is its endpoint."""

    type: WebhookType
    operations: Collection[str] | None  # None means all operations.
    subresource: str | None  # None means the main body only; '*' means everything.
    persistent: bool
    side_effects: bool
    ignore_failures: bool

    def check_operation(self, operation: str | None) -> bool:
        return self.operations is None or operation is None or operation in self.operations

    def check_subresource(self, subresource: str | None) -> bool:
        return self.subresource == "*" or self.subresource == subresource
