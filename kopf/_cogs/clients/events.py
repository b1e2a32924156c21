"""
Posting the k8s-events (``kind: Event`` of the core v1 API) about the objects.

The events are informational: a failure to post one is logged and ignored, it never
breaks the handling of the object. Events about events are silently skipped (to prevent
the "event explosions" when the events themselves are handled). The messages are
truncated to a size that the API server accepts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import aiohttp

from kopf._cogs.aiokits import clock
from kopf._cogs.clients import api, errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import ObjectReference
from kopf._cogs.structs.credentials import LoginError, Vault
from kopf._cogs.structs.references import Resource

#: The core v1 events: where the k8s-events are posted.
EVENTS_RESOURCE = Resource("", "v1", "events", kind="Event", namespaced=True)

#: The maximum length of a message, including the truncation suffix.
MAX_MESSAGE_LENGTH = 1024
CUT_MESSAGE_INFIX = "..."

#: The name of the component as seen in ``kubectl describe`` ("From").
REPORTING_COMPONENT = "kopf"

#: Not an object's logger: posting failures must not be posted as events again (recursively).
logger = logging.getLogger(__name__)


def truncate_message(message: str, limit: int = MAX_MESSAGE_LENGTH) -> str:
    """Cut the middle of a long message, keeping its beginning and its end (e.g. the error)."""
    if len(message) <= limit:
        return message
    keep = limit - len(CUT_MESSAGE_INFIX)
    tail = keep // 2
    head = keep - tail  # the odd one goes to the head: 511 + "..." + 510, as the published framework cuts
    return message[:head] + CUT_MESSAGE_INFIX + (message[-tail:] if tail else "")


def build_event(
    *,
    ref: ObjectReference,
    type: str,
    reason: str,
    message: str = "",
    instance: str | None = None,
    component: str = REPORTING_COMPONENT,
    name_prefix: str = "kopf-event-",
) -> dict[str, Any]:
    """The body of a core v1 Event about the referenced object."""
    now = clock.utcnow().isoformat(timespec="microseconds").replace("+00:00", "Z")
    namespace = ref.get("namespace") or "default"
    full_ref = {key: val for key, val in ref.items() if val is not None}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "namespace": namespace,
            "generateName": name_prefix,
        },
        "action": "Action",
        "type": type,
        "reason": reason,
        "message": truncate_message(message or ""),
        "reportingComponent": component,
        "reportingInstance": instance or "dev",
        "source": {"component": component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "eventTime": None,
        "count": 1,
        "involvedObject": full_ref,
    }


def _ignored(body: bytes) -> None:
    """The created event as the API returns it: never used, so never parsed (two events per handled object)."""


def is_event(ref: ObjectReference) -> bool:
    return ref.get("apiVersion") in ("v1", "events.k8s.io/v1", "events.k8s.io/v1beta1") and ref.get("kind") == "Event"


async def post_event(
    *,
    ref: ObjectReference,
    type: str,
    reason: str,
    message: str = "",
    settings: OperatorSettings,
    resource: Resource = EVENTS_RESOURCE,
    instance: str | None = None,
    vault: Vault | None = None,
    backoffs: Iterable[float] = (),
) -> None:
    """
    Post a k8s-event about the referenced object; never fail (only log the failures).

    Respects ``settings.posting.enabled``; the level filtering is up to the callers
    (e.g. the logging handler that turns the objects' log messages into events).
    """
    if not settings.posting.enabled:
        return
    if is_event(ref):
        return  # no events for events
    posting = settings.posting
    body = build_event(
        ref=ref,
        type=type,
        reason=reason,
        message=message,
        instance=instance or posting.reporting_instance,
        component=posting.reporting_component,
        name_prefix=posting.event_name_prefix,
    )
    url = resource.get_url(namespace=body["metadata"]["namespace"])
    delays = iter(backoffs)
    while True:
        try:
            await api.post(url, payload=body, settings=settings, logger=logger, vault=vault, decode=_ignored)
            return
        except (TimeoutError, errors.APIError, aiohttp.ClientError, LoginError) as e:
            permanent = isinstance(e, errors.APIClientError) and not isinstance(e, errors.APITooManyRequests)
            delay = None if permanent else next(delays, None)
            if delay is None:
                logger.warning(
                    f"Failed to post an event. Ignoring and continuing. "
                    f"Event: type={type!r}, reason={reason!r}, message={message!r}. Error: {e!r}"
                )
                return
            await asyncio.sleep(delay)
