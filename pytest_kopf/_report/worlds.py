"""A world's typed trace as a run of a timeline: its lanes and items.

The lanes: the user (the user's actions: the anchors at which two worlds are aligned); the simulator
(the perturbations, the faults it injected, the crashes); each incarnation of the operator (a crash or a
restart starts the next one), with its requests (paired with their responses, and the handler whose
code made them), the watch events it got, its handlers' outcomes and its other log lines; then each
object, with its changes (the resource version, who wrote it, the fields changed). The cluster's own
start (its nodes, service accounts, the manifests) is not drawn; nor are the lanes with nothing on them.

Each item's key (what it is, regardless of when and in which world) leaves out what differs between two
equal runs: resource versions, uids, timestamps, generated names' suffixes. The simulator's items are set
aside: they are the checked world's perturbations by design, and the worlds part where the operator or the
objects do something else.
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from kopf_sim.recording.show import describe_change
from kopf_sim.timelines.model import Item, Lane, Run

from .._tracing import Change, Delivery, Entry, Fault, Log, Note, Request, Response, Step
from .handlers import handler_line

__all__ = ["SIMULATOR", "USER", "world_run"]

USER = "user"
SIMULATOR = "simulator"
#: kopf posts a k8s Event per handler's run: not drawn (the operator's POST of each is on its lane).
EVENT_PLURALS = frozenset({"events"})

_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?")
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_RV = re.compile(r'("resourceVersion":\s*"?)\d+|(\brv=|resourceVersion=)\d+')
_SUFFIX = re.compile(r"(?<=[a-z0-9]-)[bcdfghjklmnpqrstvwxz2456789]{5}\b")
_DURATION = re.compile(r"\b\d+\.\d+\b")


def normal(text: str) -> str:
    """A text without what differs between two equal runs (times, uids, resource versions, generated suffixes)."""
    text = _TIMESTAMP.sub("<time>", text)
    text = _UID.sub("<uid>", text)
    text = _RV.sub(lambda m: (m.group(1) or m.group(2)) + "<rv>", text)
    return _SUFFIX.sub("*", text)


def world_run(title: str, entries: Sequence[Entry], *, scrub: Callable[[str], str] = str) -> Run:
    """The run of a world's trace (see the module's docs); ``scrub`` cleans every text shown (paths)."""
    builder = _Builder(scrub)
    for entry in entries:
        builder.add(entry)
    return builder.run(title)


class _Builder:
    def __init__(self, scrub: Callable[[str], str]) -> None:
        self.scrub = scrub
        self.items: list[Item] = []
        self.incarnation = 1
        self.started = False  # the cluster has started: its changes from now on are the run's, not its start's
        self.pending: dict[int, tuple[int, Request]] = {}  # id(request) → its item's index, until its response
        self.objects: list[str] = []

    @property
    def operator(self) -> str:
        return f"operator #{self.incarnation}"

    def item(
        self,
        entry: Entry,
        lane: str,
        kind: str,
        label: str,
        details: str = "",
        *,
        key: str = "",
        outcome: str = "",
        anchor: bool = False,
        aside: bool = False,
    ) -> None:
        scrub = self.scrub
        self.items.append(
            Item(entry.time, lane, kind, scrub(label), scrub(details), outcome, scrub(key), anchor=anchor, aside=aside)
        )

    def add(self, entry: Entry) -> None:
        if not isinstance(entry, Change):
            self.started = True
        if isinstance(entry, Step):
            self._step(entry)
        elif isinstance(entry, Request):
            self._request(entry)
        elif isinstance(entry, Response):
            self._response(entry)
        elif isinstance(entry, Change):
            self._change(entry)
        elif isinstance(entry, Delivery):
            self._delivery(entry)
        elif isinstance(entry, Fault):
            self._fault(entry)
        elif isinstance(entry, Log):
            self._log(entry)
        elif isinstance(entry, Note):
            self.item(entry, SIMULATOR, entry.label, f"{entry.label}: {entry.description}", entry.description)

    def _step(self, step: Step) -> None:
        if step.user:
            self.item(step, USER, "action", step.code, step.code, key=normal(step.code), anchor=True)
            return
        kind = "restart" if step.restarts else "step"
        self.item(step, SIMULATOR, kind, step.code, step.code, aside=True)
        if step.restarts:
            self.incarnation += 1

    def _request(self, request: Request) -> None:
        short = _short_path(request.path)
        listing = request.method == "GET" and _is_list(request.path)
        verb = "WATCH" if request.watch else ("LIST" if listing else request.method)
        kind = "discovery" if short.startswith("discovery") else "read" if request.method == "GET" else "write"
        label = f"{verb} {short}" + (f" · {request.handler}" if request.handler else "")
        details = [f"{request.method} {request.path}{'?' + request.query if request.query else ''}"]
        if request.handler:
            details.append(f"by the handler {request.handler!r}")
        if request.body:
            details.extend(["", _pretty(request.body)])
        query = "&".join(part for part in request.query.split("&") if not part.startswith("resourceVersion="))
        key = normal(f"request {request.method} {request.path}?{query} {request.handler} {request.body}")
        self.pending[id(request)] = (len(self.items), request)
        self.item(request, self.operator, kind, label, "\n".join(details), key=key)

    def _response(self, response: Response) -> None:
        found = self.pending.pop(id(response.request), None) if response.request is not None else None
        if found is None:
            return
        index, request = found
        item = self.items[index]
        answered = str(response.status) if response.error is None else response.error
        ok = response.error is None and response.status is not None and response.status < 400
        cut = " (cut off)" if response.error == "CancelledError" else ""
        after = f" after {response.time - request.time:.6f} s" if response.time > request.time else ""
        verb, _, rest = item.label.partition(" ")
        path, _, handler = rest.partition(" · ")
        self.items[index] = Item(
            item.t,
            item.lane,
            item.kind,
            f"{verb} {path} → {answered}{cut}" + (f" · {handler}" if handler else ""),
            f"{item.details}\n\n→ {answered}{cut}{after}",
            outcome="ok" if ok else "failed",
            key=item.key if request.watch else f"{item.key} → {answered}",  # a stream ends when it ends
        )

    def _change(self, change: Change) -> None:
        if not self.started:
            return
        if change.plural in EVENT_PLURALS and not change.group:
            return  # kopf's k8s Events about its handlers: their POSTs are on the operator's lane
        lane = _object_lane(change)
        if lane not in self.objects:
            self.objects.append(lane)
        obj = dict(change.obj) if change.obj is not None else {"metadata": {"resourceVersion": str(change.rv)}}
        old = dict(change.old) if change.old is not None else None
        label, details = describe_change(change.type, obj, old)
        kind = change.type.lower()
        self.item(change, lane, kind, label, details, key=normal(f"{change.type} {lane} {label}"))

    def _delivery(self, delivery: Delivery) -> None:
        if delivery.plural in EVENT_PLURALS and not delivery.group:
            return
        label = f"got {delivery.type} {delivery.plural} {delivery.where} rv={delivery.rv}"
        key = normal(f"got {delivery.type} {delivery.resource} {delivery.where}")
        self.item(delivery, self.operator, "event", label, _dumped(delivery.obj), key=key)

    def _fault(self, fault: Fault) -> None:
        crash = fault.description.startswith("crash")
        self.item(fault, SIMULATOR, "crash" if crash else "fault", fault.description, fault.description, aside=True)
        if crash:
            self.incarnation += 1

    def _log(self, log: Log) -> None:
        where = f"[{log.where}] " if log.where else ""
        line = handler_line(log.message)
        details = f"{log.level} {log.record.name}: {where}{log.message}"
        if log.record.exc_info and log.record.exc_info[1] is not None:
            details += "\n\n" + "".join(traceback.format_exception(*log.record.exc_info))
        failed = log.record.levelno >= logging.ERROR or (line is not None and line.failed)
        kind = "handler" if line is not None else "log"
        outcome = "failed" if failed else ("ok" if line is not None and line.outcome == "succeeded" else "")
        key = normal(f"log {log.level} {where}{_DURATION.sub('<n>', log.message)}")
        about = f" ({log.where})" if log.where else ""
        label = f"{line.id} {line.outcome}{about}" if line is not None else f"{log.message}{about}"
        self.item(log, self.operator, kind, label, details, outcome=outcome, key=key)

    def run(self, title: str) -> Run:
        lanes = [Lane(USER, "user", "actor"), Lane(SIMULATOR, "simulator", "actor")]
        lanes.extend(Lane(f"operator #{n}", f"operator #{n}", "actor") for n in range(1, self.incarnation + 1))
        lanes.extend(Lane(lane, lane.replace(" ", "\n", 1), "object") for lane in self.objects)
        used = {item.lane for item in self.items} | {USER}
        return Run(title=title, lanes=[lane for lane in lanes if lane.id in used], items=self.items)


def _object_lane(change: Change) -> str:
    return f"{change.plural} {change.where}"


def _short_path(path: str) -> str:
    """An API path as a person says it: ``gadgets default/obj-0/status``, ``configmaps default/`` …"""
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"] and len(parts) >= 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        rest = parts[3:]
    else:
        return f"discovery {path}" if parts[:1] in (["api"], ["apis"]) else path
    if not rest:
        return f"discovery {path}"
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1] + "/", rest[2:]
    plural, names = rest[0], rest[1:]
    return f"{plural} {namespace}{'/'.join(names)}".rstrip()


def _is_list(path: str) -> bool:
    parts = [part for part in path.split("/") if part]
    core = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if core[:1] == ["namespaces"] and len(core) >= 3:
        core = core[2:]
    return len(core) == 1


def _pretty(body: str) -> str:
    try:
        return json.dumps(json.loads(body), indent=2, sort_keys=True, ensure_ascii=False)
    except ValueError:
        return body


def _dumped(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) if obj is not None else ""
