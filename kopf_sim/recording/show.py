"""A watch-event log as a timeline page (``kopf-sim show LOG.jsonl -o report.html``).

A recorded incident, looked at before it becomes a test: a lane per object (all the k8s Events on
one lane of their own, bookmarks and errors on their watch's lane), an item per event, labelled with
the fields it changed since the object's previous version and with who wrote it (the managers whose
``managedFields`` entry that write touched). Hovering over or clicking an item shows the fields
changed (old → new) and the whole object as it was delivered.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.recording.eventlog import LogEvent
from kopf_sim.recording.replaying import WatchLog, select
from kopf_sim.timelines.differences import ABSENT, changed_fields, dotted, shown
from kopf_sim.timelines.model import Item, Lane, Page, Run, Table, Text

__all__ = ["EVENTS_LANE", "describe_change", "log_page"]

EVENTS_LANE = "k8s Events"
EVENT_RESOURCES = frozenset({("", "events"), ("events.k8s.io", "events")})
#: The changed fields named in an item's label (all of them are in its details).
FIELDS_IN_LABEL = 3


def log_page(
    log: WatchLog, *, resources: Sequence[str] | None = None, until: float | None = None, title: str = ""
) -> Page:
    """The page of a log: every event (or the changes of ``resources`` only), up to ``until`` seconds into it."""
    events = (
        select(log, resources=resources, until=until)
        if resources
        else [event for event in log.events if until is None or event.t <= until]
    )
    items = list(_items(events))
    lanes = [Lane(lane, lane, "actor" if lane.startswith("watch ") else "object") for lane in _lanes(items)]
    run = Run(title="the log", lanes=lanes, items=items)
    return Page(
        title=title or f"Watch-event log: {log.source}",
        runs=[run],
        before=[_summary(log, events)],
        after=[_objects(events)],
    )


def _lanes(items: Iterable[Item]) -> list[str]:
    """The objects' lanes in the order they first appear; the k8s Events' and the watches' after them."""
    order = list(dict.fromkeys(item.lane for item in items))
    late = [lane for lane in order if lane == EVENTS_LANE or lane.startswith("watch ")]
    return [lane for lane in order if lane not in late] + late


def _object_lane(event: LogEvent) -> str:
    metadata = meta(event.object)
    kind = str(event.object.get("kind") or event.resource.plural)
    namespace = metadata.get("namespace")
    return f"{kind} {namespace + '/' if namespace else ''}{metadata.get('name')}"


def _items(events: Iterable[LogEvent]) -> Iterable[Item]:
    previous: dict[tuple[str, str, str, str], JsonDict] = {}
    for event in events:
        where = f"line {event.line} of {event.source}"
        if event.type == "BOOKMARK":
            rv = meta(event.object).get("resourceVersion")
            yield Item(event.t, f"watch {event.resource.qualified}", "bookmark", f"BOOKMARK rv={rv}", where)
            continue
        if event.type == "ERROR":
            code, reason = event.object.get("code"), event.object.get("reason")
            yield Item(
                event.t,
                f"watch {event.resource.qualified}",
                "error",
                f"ERROR {code} {reason}: {event.object.get('message', '')}",
                f"{where}\n\n{_yaml(event.object)}",
                outcome="failed",
            )
            continue
        if (event.resource.group, event.resource.plural) in EVENT_RESOURCES:
            yield _k8s_event(event, where)
            continue
        before = previous.get(event.identity)
        previous[event.identity] = event.object
        if event.type == "DELETED":
            previous.pop(event.identity, None)
        yield _change(event, before, where)


def _change(event: LogEvent, before: JsonDict | None, where: str) -> Item:
    label, details = describe_change(event.type, event.object, before, where=where)
    if event.relisted:
        label += " (found by a relist after a 410)"
    kind = event.type.lower() if event.type in ("ADDED", "MODIFIED", "DELETED") else "change"
    return Item(event.t, _object_lane(event), kind, label, details)


def describe_change(event_type: str, obj: JsonDict, before: JsonDict | None, *, where: str = "") -> tuple[str, str]:
    """An object's change as a timeline shows it: a label (type, rv, writers, fields changed), and its details.

    ``before``: the object's previous version, if known (the fields changed since then are listed, old → new);
    ``where``: the change's origin (e.g. a log's file and line), first in the details.
    """
    metadata = meta(obj)
    writers = _writers(before, obj) if event_type != "DELETED" else []
    changes = [
        (path, old, new)
        for path, old, new in changed_fields(before or {}, obj)
        if path[:2] not in (("metadata", "resourceVersion"), ("metadata", "managedFields"))
    ]
    label = f"{event_type} rv={metadata.get('resourceVersion')}"
    if writers:
        label += f" by {', '.join(writers)}"
    if event_type == "MODIFIED":
        fields = list(dict.fromkeys(dotted(path[:3]) for path, _, _ in changes))
        label += ": " + (", ".join(fields[:FIELDS_IN_LABEL]) if fields else "no field changed")
        if len(fields) > FIELDS_IN_LABEL:
            label += f" (+{len(fields) - FIELDS_IN_LABEL} more)"
    lines = [where] if where else []
    if writers:
        lines.append(f"written by: {', '.join(writers)} (their managedFields entries changed)")
    if event_type == "MODIFIED" and before is not None:
        lines.extend(["", "changed (before → after):"])
        lines.extend(f"  {dotted(path)}: {shown(old)} → {shown(new)}" for path, old, new in changes)
    elif event_type == "MODIFIED":
        lines.append("(the object's previous version is not known)")
    lines.extend(["", f"the object ({event_type}):", _yaml(obj)])
    return label, "\n".join(lines).lstrip("\n")


def _k8s_event(event: LogEvent, where: str) -> Item:
    obj = event.object
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    about = f"{involved.get('kind', '?')} {involved.get('name', '?')}" if isinstance(involved, dict) else "?"
    message = obj.get("message") or obj.get("note") or ""
    label = f"{obj.get('type', '')} {obj.get('reason', '')} on {about}: {message}".strip()
    return Item(
        event.t,
        EVENTS_LANE,
        "event",
        label,
        f"{where}\n\n{_yaml(obj)}",
        outcome="failed" if obj.get("type") == "Warning" else "",
    )


def _writers(before: JsonDict | None, after: JsonDict) -> list[str]:
    """Who made the write: the managers whose ``managedFields`` entry is new or newly timed in this version.

    Failing that (two writes within one second keep an entry's time), those whose fields grew. A manager that
    only lost fields (taken over by the writer) did not write.
    """

    def entries(obj: JsonDict | None) -> dict[tuple[str, str, str], tuple[Any, Any]]:
        managed = meta(obj or {}).get("managedFields") or []
        return {
            (str(entry.get("manager", "")), str(entry.get("operation", "")), str(entry.get("subresource", ""))): (
                entry.get("time"),
                entry.get("fieldsV1") or {},
            )
            for entry in managed
            if isinstance(entry, dict) and entry.get("manager")
        }

    old, new = entries(before), entries(after)
    timed = [key for key, (time, _) in new.items() if key not in old or old[key][0] != time]
    grown = [
        key
        for key, (_, fields) in new.items()
        if key in old and any(value is not ABSENT for _, _, value in changed_fields(old[key][1], fields))
    ]
    return list(dict.fromkeys(key[0] for key in timed or grown))


def _yaml(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=120).rstrip()


def _summary(log: WatchLog, events: Sequence[LogEvent]) -> Text:
    paragraphs = []
    for number, header in enumerate(log.headers, 1):
        source = header.get("source")
        what = "; ".join(
            f"{key}: {', '.join(map(str, value)) if isinstance(value, list) else value}"
            for key, value in (source if isinstance(source, dict) else {}).items()
            if value not in (None, "", [])
        )
        paragraphs.append(
            f"Segment {number}: started {header.get('started', '?')}; secrets {header.get('secrets', '?')}"
            + (f"; {what}" if what else "")
        )
    counts = collections.Counter(event.type for event in events)
    span = f"{events[0].t:g} to {events[-1].t:g} s" if events else "no events"
    objects = len({event.identity for event in events if event.type in ("ADDED", "MODIFIED", "DELETED")})
    paragraphs.append(
        f"{len(events)} events shown ({', '.join(f'{n} {t}' for t, n in sorted(counts.items())) or 'none'}) "
        f"about {objects} objects, over {span}."
    )
    return Text(title="The log", paragraphs=paragraphs, id="summary")


@dataclasses.dataclass
class _Seen:
    events: int = 0
    first: float = 0.0
    last: float = 0.0
    rv: str = ""
    end: str = ""


def _objects(events: Sequence[LogEvent]) -> Table:
    seen: dict[str, _Seen] = {}
    for event in events:
        if event.type not in ("ADDED", "MODIFIED", "DELETED"):
            continue
        if (event.resource.group, event.resource.plural) in EVENT_RESOURCES:
            continue
        entry = seen.setdefault(_object_lane(event), _Seen(first=event.t))
        entry.events += 1
        entry.last = event.t
        entry.rv = str(meta(event.object).get("resourceVersion") or "")
        entry.end = "deleted" if event.type == "DELETED" else "present"
    rows = [
        [lane, str(entry.events), f"{entry.first:g} s", f"{entry.last:g} s", entry.rv, entry.end]
        for lane, entry in seen.items()
    ]
    return Table(
        title="Objects",
        header=["object", "events", "first", "last", "last resourceVersion", "at the end"],
        rows=rows,
        id="objects",
    )
