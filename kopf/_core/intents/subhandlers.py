"""
The context of the currently executed handler, for registering its sub-handlers.

The machinery that invokes a change-detecting handler sets these context variables
for the duration of the call (they are isolated per asyncio task and copied into
the threads of sync handlers); ``@kopf.subhandler``/``kopf.register`` use them
to put the sub-handlers into the parent's own registry, with the parent's id as a prefix.
"""

import contextvars

from kopf._cogs.structs.ids import HandlerId
from kopf._core.intents.handlers import BaseHandler
from kopf._core.intents.registries import ChangingRegistry

# The registry to collect the sub-handlers of the currently executed handler.
subregistry_var: contextvars.ContextVar[ChangingRegistry] = contextvars.ContextVar("subregistry_var")

# The currently executed handler itself: its id is the prefix of the sub-handlers' ids.
handler_var: contextvars.ContextVar[BaseHandler] = contextvars.ContextVar("handler_var")


class NoParentHandlerError(RuntimeError):
    """Raised when sub-handlers are declared outside of any handler."""


def get_current_subregistry() -> ChangingRegistry:
    try:
        return subregistry_var.get()
    except LookupError:
        raise NoParentHandlerError(
            "Sub-handlers can be declared (@kopf.subhandler, kopf.register) only inside "
            "of a change-detecting handler while it is executed, not at the module level."
        ) from None


def get_current_handler_id() -> HandlerId | None:
    """The id of the currently executed handler, if any: to prefix the sub-handlers' ids."""
    handler = handler_var.get(None)
    return handler.id if handler is not None else None
