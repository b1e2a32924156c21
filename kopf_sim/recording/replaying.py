"""Replaying a watch-event log into a cluster: read and validate it, plan its changes, write them in time.

Reading checks every line before anything is written (:class:`LogError` lists each problem as
``FILE:LINE: what``); preparing a replay checks that the target cluster serves every resource
of the selected events (or that a CRD earlier in the log defines it). Then a :class:`Replay`
writes the changes (:mod:`kopf_sim.recording.replay_steps`) at their relative times (``speed``: 2.0 is twice
as fast; ``None``: as soon as the cluster has had no writes for ``quiet`` seconds, i.e. the
operator under test is done with the previous change). Step by step, a caller can also apply
them one at a time (``for step in replay: await replay.apply(step)``) and do other things
between them, e.g. generated actions that continue a recorded incident.

A write that fails stops the replay with a :class:`ReplayError` that names the line, and
says how many changes were written before it (none after it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.recording.apiclient import Api, ApiFailure, Discovery, Served
from kopf_sim.recording.eventlog import EVENT_TYPES, FORMAT, VERSION, LogEvent, ResourceRef
from kopf_sim.recording.replay_steps import (
    CRDS,
    KOPF_BOOKKEEPING,
    Bookkeeping,
    ReplayStep,
    StepWriter,
    plan_steps,
)

__all__ = [
    "CHANGES",
    "KOPF_BOOKKEEPING",
    "Bookkeeping",
    "LogError",
    "LogEvent",
    "LogProblem",
    "Replay",
    "ReplayError",
    "ReplayStep",
    "ResourceRef",
    "WatchLog",
    "parse_log",
    "prepare",
    "read_log",
]

CHANGES = ("ADDED", "MODIFIED", "DELETED")
#: Not replayed unless asked for by name: reports about objects, not their state (the operator under test
#: posts its own).
NOT_REPLAYED_BY_DEFAULT = frozenset({("", "events"), ("events.k8s.io", "events")})
MAX_PROBLEMS_SHOWN = 20
#: The latest time a log can tell of, in seconds since its first header's start (about 31 years): a ``t`` beyond it is
#: a broken log, not a recording (replayed, it would wait for ages, and print a duration of hundreds of digits).
MAX_LOG_SECONDS = 1e9


@dataclasses.dataclass(frozen=True)
class WatchLog:
    """A read log: its headers (one per appended segment) and its events, times counted from the first header."""

    source: str
    headers: tuple[JsonDict, ...]
    events: tuple[LogEvent, ...]

    def changes(self) -> list[LogEvent]:
        """The events that change objects (no bookmarks, no errors)."""
        return [event for event in self.events if event.type in CHANGES]

    def with_events(self, events: Iterable[LogEvent]) -> WatchLog:
        """The same log with other events (e.g. mutated by a strategy)."""
        return dataclasses.replace(self, events=tuple(events))

    def dumps(self) -> str:
        """The log as JSON Lines again (one header; the times as they are): to save a mutated log."""
        header = dict(self.headers[0]) if self.headers else {"format": FORMAT, "version": VERSION}
        lines = [json.dumps(header, separators=(",", ":"), sort_keys=True)]
        lines.extend(event.to_line() for event in self.events)
        return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class LogProblem:
    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}" if self.line else f"{self.source}: {self.message}"


class LogError(ValueError):
    """A log that cannot be replayed, with every problem found (nothing was written)."""

    def __init__(self, problems: Sequence[LogProblem]) -> None:
        self.problems = list(problems)
        shown = [f"  {problem}" for problem in self.problems[:MAX_PROBLEMS_SHOWN]]
        if len(self.problems) > MAX_PROBLEMS_SHOWN:
            shown.append(f"  … and {len(self.problems) - MAX_PROBLEMS_SHOWN} more")
        count = f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"
        super().__init__(f"The log cannot be replayed ({count}; nothing was written):\n" + "\n".join(shown))


class ReplayError(RuntimeError):
    """A write of a replay failed: where in the log, and how far the replay got."""

    def __init__(self, step: ReplayStep, number: int, total: int, cause: Exception) -> None:
        self.step, self.number, self.total, self.cause = step, number, total, cause
        before = f"the {number - 1} before it were written" if number > 1 else "nothing was written before it"
        super().__init__(
            f"The replay stopped at {step.where} ({step.describe()}), change {number} of {total}: "
            f"{cause}. Of the log's changes, {before}; none after it."
        )


# -- reading -------------------------------------------------------------------------------------


def read_log(path: str | os.PathLike[str]) -> WatchLog:
    """Read and validate a log file; :class:`LogError` names every bad line."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as stream:
            return parse_log(stream, source=source)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LogError([LogProblem(source, 0, f"cannot read the log: {reason}")]) from None


def parse_log(lines: Iterable[str], *, source: str = "<log>") -> WatchLog:
    """Parse and validate the lines of a log (a file object, a list, or a text with ``splitlines()``)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    parser = _LogParser(source)
    for number, text in enumerate(lines, 1):
        if text.strip():
            parser.line(number, text)
    return parser.result()


class _LogParser:
    """The state of a log's parsing, line by line: its headers, its events, and what is wrong with it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[LogProblem] = []
        self.headers: list[JsonDict] = []
        self.events: list[LogEvent] = []
        self.first_start: datetime.datetime | None = None
        self.offset = 0.0
        self.header_known = False  # a header line was seen (good or bad), or its absence reported
        self.previous: LogEvent | None = None  # the last good event, and its own 't' in its segment
        self.previous_t = 0.0
        self.disordered = False  # the time went back in this segment (said once)

    def problem(self, number: int, text: str) -> None:
        self.problems.append(LogProblem(self.source, number, text))

    def line(self, number: int, text: str) -> None:
        try:
            data = json.loads(text)
        except ValueError as exc:
            self.problem(number, f"not JSON ({exc})")
            return
        if not isinstance(data, dict):
            self.problem(number, f"expected a JSON object, got {type(data).__name__}")
        elif "format" in data or "version" in data:
            self.header(number, data)
        else:
            self.event(number, data)

    def header(self, number: int, data: JsonDict) -> None:
        self.header_known = True
        problem, started = _check_header(data)
        if problem:
            self.problem(number, problem)
            return
        if self.first_start is not None and started is not None:
            since_first = (started - self.first_start).total_seconds()
            if since_first > MAX_LOG_SECONDS:
                self.problem(
                    number,
                    f"the header's start time {data['started']!r} is {since_first:.0f} s after the first "
                    f"header's: more than {MAX_LOG_SECONDS:.0f} s (about 31 years)",
                )
            else:
                self.offset = max(self.offset, since_first)
        self.headers.append(data)
        if self.first_start is None:
            self.first_start = started
        # A segment never goes back before the events above it (its recorder's clock may have been behind).
        self.offset = max(self.offset, self.previous.t if self.previous is not None else 0.0)
        self.previous_t, self.disordered = 0.0, False

    def event(self, number: int, data: JsonDict) -> None:
        if not self.headers and not self.header_known:
            self.header_known = True
            self.problem(
                number,
                f"no header: a log starts with a line like "
                f'{{"format": "{FORMAT}", "version": {VERSION}, …}} '
                f"(logs of older kopf-sim versions cannot be replayed)",
            )
        event, problem = _parse_event(data, self.source, number, self.offset)
        if problem is None and event is not None and self.previous is not None and data["t"] < self.previous_t:
            # previous_t is 0 at a segment's start: its times count from its own header. One such line per segment
            # is named: a log out of order (e.g. reversed) would name each of its lines.
            if not self.disordered:
                problem = (
                    f"the time goes back: 't' is {_short(data['t'])}, before the {_short(self.previous_t)} of line "
                    f"{self.previous.line} (the events are in the order they happened: 't' never decreases)"
                )
            self.disordered = True
        if problem:
            self.problem(number, problem)
        elif event is not None and not self.disordered:
            self.events.append(event)
            self.previous, self.previous_t = event, data["t"]

    def result(self) -> WatchLog:
        if not self.headers and not self.problems:
            self.problem(0, "the log is empty (not even a header)")
        if self.problems:
            raise LogError(self.problems)
        return WatchLog(source=self.source, headers=tuple(self.headers), events=tuple(self.events))


def _check_header(data: JsonDict) -> tuple[str | None, datetime.datetime | None]:
    if data.get("format") != FORMAT:
        return f"not a watch-event log of kopf-sim: the format is {data.get('format')!r}, not {FORMAT!r}", None
    if data.get("version") != VERSION:
        return f"unknown log version {data.get('version')!r} (this kopf-sim reads version {VERSION})", None
    started = data.get("started")
    if started is None:
        return None, None
    try:
        moment = datetime.datetime.fromisoformat(str(started).replace("Z", "+00:00"))
    except ValueError:
        return f"the header's start time {started!r} is not an RFC 3339 timestamp", None
    return None, moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _short(number: float) -> str:
    """A number of a log, shown short: not the 300 digits of a broken one (JSON ints have no limit)."""
    text = str(number)
    return text if len(text) <= 20 else f"{text[:8]}…({len(text)} characters)"


def _parse_event(data: JsonDict, source: str, number: int, offset: float) -> tuple[LogEvent | None, str | None]:
    t = data.get("t")
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return None, "the event has no time offset: 't' must be the seconds since the log's start"
    if isinstance(t, float) and not math.isfinite(t):
        return None, f"the event's time 't' is {json.dumps(t)}: not a finite number of seconds since the log's start"
    if t < 0:
        return None, f"the event's time 't' is {_short(t)}: negative (it is the seconds since the log's start)"
    if t > MAX_LOG_SECONDS - offset:  # an int of hundreds of digits compares, but would not convert to a float
        return None, (
            f"the event's time 't' is {_short(t)} s: more than {MAX_LOG_SECONDS:.0f} s (about 31 years) "
            f"after the log's start"
        )
    resource = data.get("resource")
    if (
        not isinstance(resource, dict)
        or not isinstance(resource.get("group"), str)
        or not resource.get("version")
        or not resource.get("plural")
        or not isinstance(resource["version"], str)
        or not isinstance(resource["plural"], str)
    ):
        return None, 'the event has no resource: \'resource\' must be {"group": …, "version": …, "plural": …}'
    event_type = data.get("type")
    if event_type not in EVENT_TYPES:
        return None, f"unknown event type {event_type!r} (expected one of {', '.join(EVENT_TYPES)})"
    obj = data.get("object")
    if not isinstance(obj, dict):
        return None, "the event has no object"
    if event_type in CHANGES:
        name = meta(obj).get("name")
        if not isinstance(name, str) or not name:
            return None, "the event's object has no metadata.name"
    ref = ResourceRef(resource["group"], resource["version"], resource["plural"])
    return LogEvent(source, number, float(t) + offset, ref, str(event_type), obj, bool(data.get("relisted"))), None


# -- preparing -----------------------------------------------------------------------------------


def select(log: WatchLog, *, resources: Iterable[str] | None = None, until: float | None = None) -> list[LogEvent]:
    """The change events to replay: of the resources named (all but events by default), up to ``until`` seconds."""
    changes = [event for event in log.changes() if until is None or event.t <= until]
    if resources is None:
        return [e for e in changes if (e.resource.group, e.resource.plural) not in NOT_REPLAYED_BY_DEFAULT]
    wanted = [name.lower() for name in resources]
    unmatched = [name for name in wanted if not any(_named(event, name) for event in changes)]
    if unmatched:
        present = sorted({event.resource.qualified for event in changes})
        raise LogError(
            [
                LogProblem(
                    log.source,
                    0,
                    f"no events of {', '.join(map(repr, unmatched))} in the log "
                    f"(its resources: {', '.join(present) or 'none'})",
                )
            ]
        )
    return [event for event in changes if any(_named(event, name) for name in wanted)]


def _named(event: LogEvent, name: str) -> bool:
    kind = str(event.object.get("kind") or "").lower()
    group = event.resource.group
    names = {event.resource.plural, kind} - {""}
    return name in names or (bool(group) and name in {f"{n}.{group}" for n in names})


async def prepare(
    log: WatchLog | str | os.PathLike[str],
    api: Api,
    *,
    resources: Iterable[str] | None = None,
    until: float | None = None,
    namespace: str | None = None,
    bookkeeping: Bookkeeping = KOPF_BOOKKEEPING,
    discovery: Discovery | None = None,
    on_create: Callable[[Served, JsonDict], None] | None = None,
) -> Replay:
    """Read & check a log against a cluster (its API) and plan its changes; nothing is written yet.

    ``resources``: names as kubectl takes them (plural, ``plural.group``, kind); by default all but
    events. ``until``: replay only the events up to this many seconds into the log. ``namespace``:
    put all namespaced objects into this namespace. ``bookkeeping``: what the recorded operator
    wrote for itself, left to the operator under test (:data:`KOPF_BOOKKEEPING` by default;
    ``Bookkeeping()`` to replay everything).
    """
    watch_log = log if isinstance(log, WatchLog) else read_log(log)
    events = select(watch_log, resources=resources, until=until)
    discovery = discovery if discovery is not None else Discovery(api)
    served = await _check_resources(events, discovery)
    steps, skipped = plan_steps(events, served, bookkeeping=bookkeeping, namespace=namespace)
    writer = StepWriter(api, discovery, on_create=on_create)
    return Replay(watch_log, steps, skipped, writer, api)


async def _check_resources(events: Sequence[LogEvent], discovery: Discovery) -> dict[tuple[str, str, str], Served]:
    """Every resource of the events, as served by the cluster or defined by a CRD earlier in the log."""
    served: dict[tuple[str, str, str], Served] = {}
    problems: list[LogProblem] = []
    for event in events:
        key = (event.resource.group, event.resource.version, event.resource.plural)
        if key not in served:
            info = await discovery.served(*key)
            if info is None:
                problems.append(
                    LogProblem(
                        event.source,
                        event.line,
                        f"unknown resource {event.resource.qualified} "
                        f"(version {event.resource.version}): the cluster does not serve it "
                        f"(create its CRD before the replay, or replay only other resources)",
                    )
                )
                continue
            served[key] = info
        if (event.resource.group, event.resource.plural) == CRDS and event.type != "DELETED":
            for defined in _crd_resources(event.object):
                served.setdefault((defined.group, defined.version, defined.plural), defined)
    if problems:
        raise LogError(problems)
    return served


def _crd_resources(crd: JsonDict) -> list[Served]:
    spec: JsonDict = crd["spec"] if isinstance(crd.get("spec"), dict) else {}
    names: JsonDict = spec["names"] if isinstance(spec.get("names"), dict) else {}
    group, plural = str(spec.get("group") or ""), str(names.get("plural") or "")
    if not group or not plural:
        return []
    return [
        Served(
            group=group,
            version=str(version.get("name")),
            plural=plural,
            kind=str(names.get("kind") or ""),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=str(names.get("singular") or ""),
            short_names=tuple(names.get("shortNames") or ()),
            has_status="status" in (version.get("subresources") or {}),
        )
        for version in spec.get("versions") or ()
        if isinstance(version, dict) and version.get("served", True)
    ]


# -- replaying -----------------------------------------------------------------------------------


class Replay:
    """The planned changes of a log, written into a cluster all at once (:meth:`run`) or one by one (:meth:`apply`)."""

    def __init__(
        self, log: WatchLog, steps: list[ReplayStep], skipped: list[tuple[LogEvent, str]], writer: StepWriter, api: Api
    ) -> None:
        self.log = log
        self.steps = steps
        self.skipped = skipped
        self.writer = writer
        self.api = api
        self.position = 0  # the steps before it are written
        self._index = {id(step): index for index, step in enumerate(steps)}

    def __iter__(self) -> Iterator[ReplayStep]:
        """The steps not written yet, in the log's order."""
        return iter(self.steps[self.position :])

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def uids(self) -> dict[str, str]:
        """The uids of the log's objects -> the uids of the objects the replay made for them."""
        return self.writer.uids

    def summary(self) -> str:
        objects = {step.event.identity for step in self.steps}
        span = self.steps[-1].t - self.steps[0].t if self.steps else 0.0
        return (
            f"{len(self.steps)} change{'s' if len(self.steps) != 1 else ''} of {len(objects)} "
            f"object{'s' if len(objects) != 1 else ''} over {span:.1f} s of the log "
            f"({len(self.skipped)} event{'s' if len(self.skipped) != 1 else ''} with nothing to replay)"
        )

    async def apply(self, step: ReplayStep) -> None:
        """Write one step now; :class:`ReplayError` if the cluster refuses it."""
        index = self._index[id(step)]
        try:
            await self.writer.write(step)
        except (ApiFailure, TimeoutError) as exc:
            cause = exc if isinstance(exc, ApiFailure) else TimeoutError("a new CRD was not served in time")
            raise ReplayError(step, index + 1, len(self.steps), cause) from None
        self.position = max(self.position, index + 1)

    async def run(self, *, speed: float | None = 1.0, quiet: float = 1.0) -> None:
        """Write the remaining steps at their relative times, divided by ``speed``; or, with ``speed=None``,
        each one when the cluster has had no writes for ``quiet`` seconds (at most a minute), and wait so
        after the last one too. The first remaining step is written at once."""
        if speed is not None and not speed > 0:
            raise ValueError(f"The speed must be a positive number or None, got {speed!r}.")
        pending = list(self)
        if not pending:
            return
        loop = asyncio.get_running_loop()
        origin, zero = loop.time(), pending[0].t
        for index, step in enumerate(pending):
            if speed is None:
                if index:
                    await self.settle(quiet)
            else:
                delay = origin + (step.t - zero) / speed - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            await self.apply(step)
        if speed is None:
            await self.settle(quiet)

    async def settle(self, quiet: float = 1.0) -> None:
        """Wait until the cluster has had no writes for ``quiet`` seconds (looked at every quarter of it),
        but at most a minute (or ten times ``quiet``): an operator may write all the time (e.g. a timer)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(60.0, 10 * quiet)
        last, since = await self._revision(), loop.time()
        while loop.time() - since < quiet and loop.time() < deadline:
            await asyncio.sleep(quiet / 4)
            current = await self._revision()
            if current != last:
                last, since = current, loop.time()

    async def _revision(self) -> str:
        """The cluster's latest resourceVersion (a list's version is the store's current one)."""
        code, answer = await self.api("GET", "/api/v1/namespaces", params={"limit": "1"})
        return str(((answer or {}).get("metadata") or {}).get("resourceVersion", "")) if code < 400 else ""
