"""The watch-event log: one versioned JSON Lines format for everything recorded, wherever it comes from.

A log is a header line, then one line per watch event, in the order the recorder saw them::

    {"format": "kopf-sim-watch-log", "version": 1, "started": "2026-01-01T00:00:00.000000Z",
     "source": {"recorder": "kopf-sim record", "server": "https://…"}, "secrets": "redacted"}
    {"t": 0.0, "resource": {"group": "kopf.dev", "version": "v1", "plural": "kopfexamples"},
     "type": "ADDED", "object": {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", …}}

- ``t``: seconds since ``started`` (virtual seconds when a simulated cluster in virtual time recorded it),
  finite, never decreasing within a segment (the writer holds it if the clock goes back);
- ``resource``: the group (``""`` for the core API), version and plural the event was watched at;
- ``type``: ``ADDED``, ``MODIFIED``, ``DELETED``, ``BOOKMARK`` (the object carries only a
  ``resourceVersion``) or ``ERROR`` (the object is a ``Status``, e.g. a ``410 Expired``);
- ``object``: the object as the watch delivered it; a Secret's ``data`` and ``stringData`` values
  (and its ``last-applied-configuration`` annotation) are blanked unless secrets were asked for;
- ``relisted`` (optional, ``true``): the recorder did not see this change happen, but found it when
  it listed again after a ``410``.

Appending to a log (``kopf-sim serve --record`` does) starts a new segment with a header of its own;
its times count from its own ``started``. :mod:`kopf_sim.recording.replaying` reads and validates logs.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.store.watching import Change

__all__ = [
    "EVENT_TYPES",
    "FORMAT",
    "VERSION",
    "ChangeRecorder",
    "LogEvent",
    "LogWriter",
    "ResourceRef",
    "event_line",
    "format_started",
    "header_line",
    "redact",
]

FORMAT = "kopf-sim-watch-log"
VERSION = 1
EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")
REDACTED = ""  # an empty value is valid base64 and valid text: the replayed Secret keeps its keys
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def format_started(moment: datetime.datetime) -> str:
    """The ``started`` field: RFC 3339 in UTC with microseconds, so that segments line up exactly."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def header_line(*, started: datetime.datetime, source: Mapping[str, Any], secrets: bool = False) -> str:
    header = {
        "format": FORMAT,
        "version": VERSION,
        "started": format_started(started),
        "source": dict(source),
        "secrets": "included" if secrets else "redacted",
    }
    return json.dumps(header, separators=(",", ":"), sort_keys=True)


def redact(group: str, plural: str, obj: JsonDict) -> JsonDict:
    """The object without the values of a Secret's data (other objects are returned as they are)."""
    if group or plural != "secrets" or not isinstance(obj, dict):
        return obj
    redacted = dict(obj)
    for field in ("data", "stringData"):
        if isinstance(obj.get(field), dict):
            redacted[field] = dict.fromkeys(obj[field], REDACTED)
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and _LAST_APPLIED in (metadata.get("annotations") or {}):
        redacted["metadata"] = clone(metadata)
        redacted["metadata"]["annotations"][_LAST_APPLIED] = REDACTED  # it holds the data in clear text
    return redacted


def event_line(
    t: float,
    group: str,
    version: str,
    plural: str,
    event_type: str,
    obj: JsonDict,
    *,
    secrets: bool = False,
    relisted: bool = False,
) -> str:
    event: JsonDict = {
        "t": round(max(t, 0.0), 6),
        "resource": {"group": group, "version": version, "plural": plural},
        "type": event_type,
        "object": obj if secrets else redact(group, plural, obj),
    }
    if relisted:
        event["relisted"] = True
    return json.dumps(event, separators=(",", ":"), sort_keys=True)


@dataclasses.dataclass(frozen=True)
class ResourceRef:
    group: str
    version: str
    plural: str

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


@dataclasses.dataclass(frozen=True)
class LogEvent:
    """One line of a log, as read back: a watch event at ``t`` seconds since the log's start."""

    source: str
    line: int
    t: float
    resource: ResourceRef
    type: str
    object: JsonDict
    relisted: bool = False

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """The object it is about: group, plural, namespace, name (resource versions are per object)."""
        metadata = meta(self.object)
        return (
            self.resource.group,
            self.resource.plural,
            str(metadata.get("namespace") or ""),
            str(metadata.get("name") or ""),
        )

    def to_line(self) -> str:
        return event_line(
            self.t,
            self.resource.group,
            self.resource.version,
            self.resource.plural,
            self.type,
            self.object,
            secrets=True,
            relisted=self.relisted,
        )


class LogWriter:
    """Writes a log (the header first) into a text stream, flushing each line: a crash loses nothing written."""

    def __init__(
        self, stream: IO[str], *, started: datetime.datetime, source: Mapping[str, Any], secrets: bool = False
    ) -> None:
        self.stream = stream
        self.started = started
        self.secrets = secrets
        self.events = 0
        self.last_t = 0.0
        self._write(header_line(started=started, source=source, secrets=secrets))

    def write(
        self, t: float, group: str, version: str, plural: str, event_type: str, obj: JsonDict, *, relisted: bool = False
    ) -> None:
        """Write one event; its time never before the previous one's (a reader refuses a log going back in time,
        and a wall clock can be set back while a cluster is being recorded)."""
        self.last_t = max(t, self.last_t)
        self._write(
            event_line(self.last_t, group, version, plural, event_type, obj, secrets=self.secrets, relisted=relisted)
        )
        self.events += 1

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


class ChangeRecorder:
    """An observer of a simulated cluster (``cluster.observers``): its committed changes as a log.

    Every change of every resource is written as the watch event it makes, at the time of the
    cluster's clock (virtual in a test, the wall clock when served).
    """

    def __init__(
        self,
        stream: IO[str],
        *,
        clock: Callable[[], datetime.datetime],
        source: Mapping[str, Any] | None = None,
        secrets: bool = False,
    ) -> None:
        self.clock = clock
        self.writer = LogWriter(stream, started=clock(), source=source or {"recorder": "kopf-sim"}, secrets=secrets)

    def __call__(self, change: Change) -> None:
        group, plural = change.key
        version = str(change.obj.get("apiVersion", "")).rpartition("/")[2]
        t = (self.clock() - self.writer.started).total_seconds()
        self.writer.write(t, group, version, plural, change.type, change.obj)

    def write_present(self, objects: Iterable[tuple[tuple[str, str], JsonDict]]) -> None:
        """Write the objects there when the recording starts, as ``ADDED`` at its start: a log replays alone.

        Without them, a log of a cluster loaded with a CRD tells of objects whose resource no other
        cluster knows. ``objects``: (group, plural) and the object; written namespaces first, then CRDs
        (they define resources for the objects after them), then the rest, each in its order of creation.
        """
        order = {("", "namespaces"): 0, ("apiextensions.k8s.io", "customresourcedefinitions"): 1}

        def position(item: tuple[tuple[str, str], JsonDict]) -> tuple[int, int]:
            rv = str(meta(item[1]).get("resourceVersion") or "0")
            return order.get(item[0], 2), int(rv) if rv.isdigit() else 0

        for (group, plural), obj in sorted(objects, key=position):
            version = str(obj.get("apiVersion", "")).rpartition("/")[2]
            self.writer.write(0.0, group, version, plural, "ADDED", obj)
