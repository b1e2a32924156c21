"""
The enumerations of "why a handler is called": reasons, activities, webhook types.

The detected causes themselves (with bodies, patches, diffs) are built by the reactor;
here are only the labels that the handlers are registered for.
"""

import enum


class Reason(enum.StrEnum):
    """The detected cause of handling a resource object (the ``reason`` kwarg)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    RESUME = "resume"
    NOOP = "noop"
    FREE = "free"
    GONE = "gone"


# The reasons for which the change-detecting handlers are invoked.
HANDLER_REASONS = (Reason.CREATE, Reason.UPDATE, Reason.DELETE, Reason.RESUME)


class Activity(enum.StrEnum):
    """The operator-level (not resource-level) activities: ``@kopf.on.startup`` & co."""

    STARTUP = "startup"
    CLEANUP = "cleanup"
    AUTHENTICATION = "authentication"
    PROBE = "probe"


class WebhookType(enum.StrEnum):
    """The kinds of admission webhooks, as in the webhook configuration resources."""

    VALIDATING = "validating"
    MUTATING = "mutating"
