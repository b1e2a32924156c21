"""Raw watch-events: ``@kopf.on.event`` sees every event of the watch stream, as it comes.

Unlike the change-detecting handlers (create/update/delete), an event handler stores nothing on the
object (no progress, no diff-base, no results) and is not retried: a failure is logged and ignored.
That suits watching objects that belong to someone else. Here:

- ``audit`` logs every event of KopfExamples: its type (``None`` for the objects listed when the watch
  starts, and for those created or changed meanwhile when it lists again after the watch expired; else
  ``ADDED``, ``MODIFIED``, ``DELETED``) and the object's resource version; a per-object ``memo`` counts them;
- ``stamp_first_seen`` puts an annotation on the objects that do not have it yet (the filter makes it
  run once per object: a patch from an event handler causes one more event, which must not loop);
- ``watch_settings`` follows the ConfigMaps labelled ``example.kopf.dev/watched``.
"""

from typing import Any

import kopf

FIRST_SEEN = "example.kopf.dev/first-seen-as"


@kopf.on.event("kopfexamples")
def audit(event: kopf.RawEvent, name: str, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    memo.events = memo.get("events", 0) + 1
    version = event["object"].get("metadata", {}).get("resourceVersion")
    logger.info(f"Event #{memo.events} of {name}: {event['type']} at version {version}.")


@kopf.on.event("kopfexamples", annotations={FIRST_SEEN: kopf.ABSENT})
def stamp_first_seen(event: kopf.RawEvent, patch: kopf.Patch, **_: Any) -> None:
    if event["type"] != "DELETED":
        patch.metadata.annotations[FIRST_SEEN] = str(event["type"] or "listed")


@kopf.on.event("v1", "configmaps", labels={"example.kopf.dev/watched": kopf.PRESENT})
def watch_settings(event: kopf.RawEvent, body: kopf.Body, name: str, logger: kopf.Logger, **_: Any) -> None:
    data = body.get("data") or {}
    logger.info(f"ConfigMap {name}: {event['type']} with keys {sorted(data)}.")
