"""Fault injection for the simulated apiserver: an aiohttp middleware driven by rules.

A :class:`FaultInjector` holds :class:`Rule` objects; each matches requests by method, path
(a regular expression), resource (``plural`` or ``plural.group``), namespace, name and
whether it is a watch, and fires on at most ``count`` of them, each with ``probability``
(drawn from the injector's own seeded generator, so the same requests in the same order
get the same faults). A firing rule applies its effect:

- :class:`Error`: an HTTP error with a proper ``kind: Status`` body (and ``Retry-After``);
- :class:`Latency`: the request waits (in loop time: instant under virtual time), then proceeds;
- :class:`DropWatch`: the watch stream ends (or is reset) after so many events;
- :class:`ExpireWatch`: the watch gets a ``410 Expired`` (in-stream ERROR event, as the apiserver does);
- :class:`Conflict`: a write gets ``409 Conflict`` ("the object has been modified ...");
- :class:`StaleRead`: a get or a list is served from an older revision (as a lagging cache would); with
  ``per_object``, from before the latest change(s) of what it reads (the object, or the objects listed);
- :class:`WithholdEvents`: a watch gets its events late, or coalesced to the latest state of each object
  (as after a relist), never out of resource-version order;
- :class:`CrashAfterWrites`: after the k-th successful write among the matching requests, a callback
  (e.g. one that kills the client) runs, and that write's response never reaches the client;
- :class:`HoldEvent`: a watch event of one object (a change of it, not a request) is held back until that
  object's next event: then coalesced away (the watchers never see that state), or delivered late, alone;
- :class:`ExpireAtEvent`: the watch streams end with a ``410 Expired`` instead of one object's event (as when a
  broken stream's version is compacted before the watcher resumes): the watchers list again.

A rule's ``skip`` lets the first so many matching requests (or changes) pass: the fault hits the next ones.

Every injection is kept in :attr:`FaultInjector.injections` and described, with the loop time and the
seeded draws (the lag of a stale read, the events coalesced away), in :attr:`FaultInjector.log`.

Usage::

    injector = FaultInjector(seed=42)
    app = build_app(cluster)
    install(app, injector)                       # before the app starts
    injector.error(503, resource="pods", method="PATCH", count=2, retry_after=1)
    injector.latency(5, path=r"/apis/kopf\\.dev/")
    injector.drop_watch(after=3, resource="kopfexamples.kopf.dev")

Requests carrying the :data:`EXEMPT_HEADER` header are never faulted (test harnesses use it
so that their own checks see the cluster as it is).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import json
import random
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from kopf_sim.kube import errors
from kopf_sim.store import lagging
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.watching import Change

__all__ = [
    "EXEMPT_HEADER",
    "Conflict",
    "CrashAfterWrites",
    "DropWatch",
    "Effect",
    "Error",
    "ExpireAtEvent",
    "ExpireWatch",
    "FaultInjector",
    "HoldEvent",
    "Injection",
    "Latency",
    "RequestInfo",
    "Rule",
    "StaleRead",
    "WithholdEvents",
    "classify",
    "install",
    "middleware",
    "serving",
]

EXEMPT_HEADER = "X-Kopf-Sim-No-Faults"

_serving: contextvars.ContextVar[str | None] = contextvars.ContextVar("kopf_sim_serving", default=None)


def serving() -> str | None:
    """The request (``METHOD path``) of an API client being served in this context, if any.

    By it, the store's observers tell the changes that the clients make (e.g. an operator under test) from
    those of the cluster's own controllers and of a harness (whose calls are direct, or exempt from faults).
    """
    return _serving.get()


_WRITE_METHODS = frozenset({"PUT", "PATCH"})
_ALL_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})

_REASONS: Mapping[int, tuple[str, str]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "the server does not allow access to the requested resource"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    409: ("Conflict", "the server reported a conflict"),
    410: ("Expired", "the resource version is too old"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
    500: ("InternalError", "an error on the server has prevented the request from succeeding"),
    502: ("InternalError", "an error on the server has prevented the request from succeeding"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but may still be processing the request",
    ),
}


# -- Effects ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Error:
    """Answer with an HTTP error: ``code``, the Status ``reason`` & ``message`` (defaults by code).

    ``applied``: the write is done, but its answer is lost to the error (an apiserver's ``504 Timeout`` when
    the storage was slow: "may still be processing the request"); a write that fails by itself answers as
    it does. A client that retries it meets its own result: e.g. a create's 409 "already exists".
    """

    code: int = 500
    reason: str | None = None
    message: str | None = None
    retry_after: int | None = None  # seconds, also as ``details.retryAfterSeconds``
    applied: bool = False


@dataclasses.dataclass(frozen=True)
class Latency:
    """Hold the request for ``seconds`` of loop time before it proceeds (or meets the next rule)."""

    seconds: float


@dataclasses.dataclass(frozen=True)
class DropWatch:
    """Cut a watch stream after ``after`` events: a clean end of the stream, or a reset if ``abort``."""

    after: int = 0
    abort: bool = False


@dataclasses.dataclass(frozen=True)
class ExpireWatch:
    """Answer a watch with ``410 Expired``: as an in-stream ERROR event (as the apiserver does) or HTTP 410."""

    in_stream: bool = True


@dataclasses.dataclass(frozen=True)
class Conflict:
    """Answer a write with ``409 Conflict``, as if the object had been modified meanwhile.

    With ``preconditioned_only``, only the writes that an apiserver could answer so fire (and count): a PUT or
    a PATCH whose body names the ``metadata.resourceVersion`` it expects (see :func:`may_conflict`). A merge
    patch without one (as kopf's status and progress patches) is applied to the latest version and never
    conflicts; a PUT without one replaces a built-in object unconditionally.
    """

    message: str | None = None
    preconditioned_only: bool = False


@dataclasses.dataclass(frozen=True)
class StaleRead:
    """Serve a get or a list from 1 to ``lag`` revisions ago (drawn by the seeded generator).

    With ``per_object``, the revisions counted are the changes of what is read (the object, or the objects
    that the list selects): the answer is what it was before its ``lag`` latest changes (an object just
    created: not found), whatever else has changed in the cluster.
    """

    lag: int = 1
    per_object: bool = False


@dataclasses.dataclass(frozen=True)
class WithholdEvents:
    """Hold a watch's events back by ``delay`` seconds; with ``coalesce``, keep only each object's latest."""

    delay: float = 1.0
    coalesce: bool = False


@dataclasses.dataclass(frozen=True)
class CrashAfterWrites:
    """After the ``writes``-th successful write of the matching requests, call ``crash`` (once).

    The write is done (it is in the store), but its response is cut off: the client never learns of it.
    """

    writes: int
    crash: Callable[[], None]


@dataclasses.dataclass(frozen=True)
class HoldEvent:
    """Hold a watch event of the matching object back (and its stream's later ones, to keep their order).

    It is let go when the same object's next event comes: with ``coalesce``, only the next one goes out (the
    watchers never see the held state, as after a relist); else the held one goes out at once and the rest
    ``spacing`` seconds later (the watcher handles the older state while the cluster has the newer one).
    If no next event comes within ``window`` seconds, the held one goes out then.
    """

    coalesce: bool = True
    window: float = 10.0
    spacing: float = 1.0


@dataclasses.dataclass(frozen=True)
class ExpireAtEvent:
    """End the watch streams of the matching object's change with a ``410 Expired`` instead of its event.

    The apiserver does so to a watcher whose stream broke and whose version was compacted before it resumed (a
    routine on a busy cluster): the watcher lists again and finds the object as it is by then. Kopf gives the
    objects of that listing to its handlers as listed (the type ``None``), not as ``ADDED`` or ``MODIFIED``.
    """


Effect = (
    Error
    | Latency
    | DropWatch
    | ExpireWatch
    | Conflict
    | StaleRead
    | WithholdEvents
    | CrashAfterWrites
    | HoldEvent
    | ExpireAtEvent
)
_DROP_KEY = web.RequestKey("kopf_sim.http.faults.drop", DropWatch)


# -- Requests --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RequestInfo:
    """What a request addresses, as far as the URL tells (no lookups in the catalogue)."""

    method: str
    path: str
    group: str | None = None
    version: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    watch: bool = False

    @property
    def qualified_resource(self) -> str | None:
        if self.resource is None:
            return None
        return f"{self.resource}.{self.group}" if self.group else self.resource


def classify(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Parse a request's REST path into its group, version, resource, namespace, name & subresource."""
    return _classified(method, path, query.get("watch", "").lower() in ("true", "1"))


@functools.lru_cache(maxsize=4096)
def _classified(method: str, path: str, watch: bool) -> RequestInfo:
    """:func:`classify`, once per path (every request is classified, by the faults and the checks' traces: the
    same few paths again and again; the infos are frozen)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(method.upper(), path, watch=watch)
    if rest and rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and not (group == "" and rest[2] in _NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else None
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    return RequestInfo(method.upper(), path, group, version, resource, namespace, name, subresource, watch)


# -- Rules -----------------------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class Rule:
    """Which requests to fault, how often, and how. ``None`` criteria match anything."""

    effect: Effect
    methods: frozenset[str] | None = None
    path: re.Pattern[str] | None = None
    resource: str | None = None  # plural, or plural.group
    namespace: str | None = None
    name: str | None = None
    watch: bool | None = None
    count: int | None = None  # fire at most this many times (None: forever)
    probability: float = 1.0
    skip: int = 0  # let this many matching requests pass before the rule can fire
    matched: int = 0  # requests that met the criteria (while the rule was active)
    hits: int = 0  # requests that got the fault

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.hits >= self.count

    def counted(self) -> bool:
        """Count a matching request (or change): whether the rule may fire on it (the skipped ones passed)."""
        self.matched += 1
        return self.matched > self.skip

    def matches(self, info: RequestInfo) -> bool:
        if self.methods is not None and info.method not in self.methods:
            return False
        if self.path is not None and self.path.search(info.path) is None:
            return False
        if self.resource is not None:
            plural, _, group = self.resource.partition(".")
            if info.resource != plural or (group and info.group != group):
                return False
        if self.namespace is not None and info.namespace != self.namespace:
            return False
        if self.name is not None and info.name != self.name:
            return False
        return self.watch is None or info.watch == self.watch


@dataclasses.dataclass(frozen=True)
class Injection:
    """One fault injected: which rule, into which request."""

    rule: Rule
    request: RequestInfo


class FaultInjector:
    """The rules of fault injection for one app; seeded, so the same run gets the same faults."""

    def __init__(self, seed: int = 0, *, store: Cluster | None = None) -> None:
        self.rules: list[Rule] = []
        #: The store whose changes the :class:`HoldEvent` rules look at (they need one).
        self.store = store
        if store is not None:
            store.holding.append(self._holding)
        self.injections: list[Injection] = []
        #: How many reads have been answered with an older state so far (settling asks at every step).
        self.stale_answers = 0
        self.log: list[str] = []
        #: Told of every request that comes through, with its response's status (0: no response), faulted or not.
        self.observers: list[Callable[[RequestInfo, int], None]] = []
        self._random = random.Random(seed)
        self._writes: dict[int, int] = {}  # successful writes counted per crash rule (by id)

    def seed(self, seed: int) -> None:
        self._random = random.Random(seed)

    def add(
        self,
        effect: Effect,
        *,
        method: str | Iterable[str] | None = None,
        path: str | re.Pattern[str] | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        watch: bool | None = None,
        count: int | None = None,
        probability: float = 1.0,
        skip: int = 0,
    ) -> Rule:
        """Add a rule (checked after the existing ones); returns it, e.g. to look at its ``hits``."""
        if count is not None and count < 0:
            raise ValueError(f"count must be non-negative, got {count!r}")
        if skip < 0:
            raise ValueError(f"skip must be non-negative, got {skip!r}")
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"probability must be within [0, 1], got {probability!r}")
        methods: frozenset[str] | None
        if method is None:
            methods = None
        elif isinstance(method, str):
            methods = frozenset({method.upper()})
        else:
            methods = frozenset(m.upper() for m in method)
        if methods is None and isinstance(effect, Conflict):
            methods = _WRITE_METHODS
        if watch is None and isinstance(effect, DropWatch | ExpireWatch | WithholdEvents):
            watch = True
        if isinstance(effect, StaleRead):
            methods, watch = frozenset({"GET"}), False
        if methods is None and (isinstance(effect, CrashAfterWrites) or (isinstance(effect, Error) and effect.applied)):
            methods = _ALL_WRITE_METHODS
        pattern = re.compile(path) if isinstance(path, str) else path
        rule = Rule(effect, methods, pattern, resource, namespace, name, watch, count, probability, skip)
        self.rules.append(rule)
        return rule

    def error(
        self,
        code: int = 500,
        *,
        reason: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
        applied: bool = False,
        **criteria: Any,
    ) -> Rule:
        return self.add(Error(code, reason, message, retry_after, applied), **criteria)

    def latency(self, seconds: float, **criteria: Any) -> Rule:
        return self.add(Latency(seconds), **criteria)

    def drop_watch(self, after: int = 0, *, abort: bool = False, **criteria: Any) -> Rule:
        return self.add(DropWatch(after, abort), **criteria)

    def expire_watch(self, *, in_stream: bool = True, **criteria: Any) -> Rule:
        return self.add(ExpireWatch(in_stream), **criteria)

    def conflict(self, *, message: str | None = None, preconditioned_only: bool = False, **criteria: Any) -> Rule:
        return self.add(Conflict(message, preconditioned_only), **criteria)

    def stale_read(self, lag: int = 1, *, per_object: bool = False, **criteria: Any) -> Rule:
        if lag < 1:
            raise ValueError(f"lag must be at least 1 revision, got {lag!r}")
        return self.add(StaleRead(lag, per_object), **criteria)

    def hold_event(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        *,
        coalesce: bool = True,
        window: float = 10.0,
        spacing: float = 1.0,
        skip: int = 0,
    ) -> Rule:
        """Hold back the watch event of the object's next change (after ``skip`` ones); see :class:`HoldEvent`."""
        if self.store is None:
            raise RuntimeError("Holding watch events needs the injector's store (FaultInjector(store=...)).")
        if window <= 0 or spacing < 0:
            raise ValueError(f"window must be positive and spacing non-negative, got {window!r}, {spacing!r}")
        effect = HoldEvent(coalesce, window, spacing)
        return self.add(effect, resource=resource, namespace=namespace, name=name, watch=True, count=1, skip=skip)

    def expire_at_event(self, resource: str, namespace: str | None, name: str, *, skip: int = 0) -> Rule:
        """The watch streams end with a 410 at the object's next change (after ``skip``): :class:`ExpireAtEvent`."""
        if self.store is None:
            raise RuntimeError("Expiring watches at an event needs the injector's store (FaultInjector(store=...)).")
        return self.add(
            ExpireAtEvent(), resource=resource, namespace=namespace, name=name, watch=True, count=1, skip=skip
        )

    def withhold_events(self, delay: float = 1.0, *, coalesce: bool = False, **criteria: Any) -> Rule:
        if delay <= 0:
            raise ValueError(f"delay must be positive, got {delay!r}")
        return self.add(WithholdEvents(delay, coalesce), **criteria)

    def crash_after(self, writes: int, crash: Callable[[], None], **criteria: Any) -> Rule:
        """Call ``crash`` right after the ``writes``-th successful write of the matching requests (once)."""
        if writes < 1:
            raise ValueError(f"writes must be at least 1, got {writes!r}")
        return self.add(CrashAfterWrites(writes, crash), count=1, **criteria)

    def note(self, text: str) -> None:
        """Add a line to the log of faults (with the loop time, if in a loop)."""
        try:
            now = f"{asyncio.get_running_loop().time():.6f}"
        except RuntimeError:
            now = "-"
        self.log.append(f"{now} {text}")

    def lag(self, rule: Rule) -> int:
        """The number of revisions a stale read of this rule lags (a seeded draw)."""
        assert isinstance(rule.effect, StaleRead)
        return self._random.randint(1, rule.effect.lag)

    def written(self, info: RequestInfo, status: int) -> Rule | None:
        """Count a write's success for the crash rules; the rule whose crash is due now (if any)."""
        if status >= 400 or info.method not in _ALL_WRITE_METHODS:
            return None
        for rule in list(self.rules):
            if not isinstance(rule.effect, CrashAfterWrites) or rule.exhausted or not rule.matches(info):
                continue
            if not rule.counted():
                continue
            count = self._writes[id(rule)] = self._writes.get(id(rule), 0) + 1
            if count >= rule.effect.writes:
                rule.hits += 1
                self._inject(rule, info)
                self.note(f"crash after write #{count}: {info.method} {info.path}")
                return rule
        return None

    def _inject(self, rule: Rule, info: RequestInfo) -> None:
        self.injections.append(Injection(rule, info))
        if isinstance(rule.effect, StaleRead):
            self.stale_answers += 1

    def needs_preconditions(self) -> bool:
        """Whether a rule fires only on the writes that name their expected version (their bodies are read)."""
        return any(isinstance(rule.effect, Conflict) and rule.effect.preconditioned_only for rule in self.rules)

    def remove(self, rule: Rule) -> None:
        self.rules.remove(rule)

    def clear(self) -> None:
        """Remove all rules (the record of past injections is kept)."""
        self.rules.clear()

    def firing(self, info: RequestInfo, *, preconditioned: bool = True) -> list[Rule]:
        """The rules that fire for this request, in order; their counters are updated.

        ``preconditioned``: whether the request names the version it expects (see :class:`Conflict`).
        """
        fired: list[Rule] = []
        for rule in list(self.rules):
            if isinstance(rule.effect, CrashAfterWrites | HoldEvent | ExpireAtEvent):
                continue  # counted on the writes' responses (see written()), or on the changes (_holding())
            if isinstance(rule.effect, Conflict) and rule.effect.preconditioned_only and not preconditioned:
                continue  # no apiserver answers it with a conflict: it does not count either
            if rule.exhausted or not rule.matches(info) or not rule.counted():
                continue
            if rule.probability < 1.0 and self._random.random() >= rule.probability:
                continue
            rule.hits += 1
            self._inject(rule, info)
            if not isinstance(rule.effect, StaleRead):  # noted with the lag drawn
                watch = " (watch)" if info.watch else ""
                self.note(f"{_describe_effect(rule.effect)}: {info.method} {info.path}{watch}")
            fired.append(rule)
        return fired

    def _holding(self, change: Change) -> lagging.Holding | None:
        """How the watchers get this change's event: held back, if a rule says so (the store asks at each change)."""
        metadata = change.obj.get("metadata") or {}
        group, plural = change.key
        namespace, name = metadata.get("namespace"), metadata.get("name")
        info = RequestInfo("WATCH", "", group, None, plural, namespace, name, subresource=None, watch=True)
        for rule in list(self.rules):
            effect = rule.effect
            if not isinstance(effect, HoldEvent | ExpireAtEvent):
                continue
            if rule.exhausted or not rule.matches(info) or not rule.counted():
                continue
            rule.hits += 1
            self._inject(rule, info)
            where = f"{info.namespace + '/' if info.namespace else ''}{info.name}"
            if isinstance(effect, ExpireAtEvent):
                self.note(
                    f"expire the watches at the event: {change.type} {info.qualified_resource} {where} rv={change.rv}"
                )
                return lagging.Holding(coalesce=True, window=0.0, note=self.note, expire=True)
            how = "until the next one, coalesced" if effect.coalesce else "until the next one, delivered late"
            self.note(f"hold event ({how}): {change.type} {info.qualified_resource} {where} rv={change.rv}")
            return lagging.Holding(effect.coalesce, effect.window, effect.spacing, note=self.note)
        return None


def _describe_effect(effect: Effect) -> str:
    if isinstance(effect, Error):
        retry = f" retry-after={effect.retry_after}" if effect.retry_after is not None else ""
        return f"error {effect.code}{retry}" + (" after the write" if effect.applied else "")
    if isinstance(effect, Latency):
        return f"latency {effect.seconds}s"
    if isinstance(effect, DropWatch):
        return f"drop watch after {effect.after}" + (" (abort)" if effect.abort else "")
    if isinstance(effect, ExpireWatch):
        return "expire watch"
    if isinstance(effect, Conflict):
        return "conflict 409"
    if isinstance(effect, WithholdEvents):
        return f"withhold events {effect.delay}s" + (" coalesced" if effect.coalesce else "")
    return type(effect).__name__


# -- The middleware --------------------------------------------------------------------------------


def install(app: web.Application, injector: FaultInjector) -> None:
    """Add the fault injection to an app that has not started yet."""
    app.middlewares.append(middleware(injector))
    app.on_response_prepare.append(_limit_watch_stream)


def middleware(injector: FaultInjector) -> Middleware:
    """The middleware alone; dropping watch streams after N>0 events also needs :func:`install`."""

    @web.middleware
    async def inject_faults(request: web.Request, handler: Handler) -> web.StreamResponse:
        if EXEMPT_HEADER in request.headers:
            return await handler(request)
        token = _serving.set(f"{request.method} {request.path}")
        try:
            return await _observed(injector, request, handler)
        finally:
            _serving.reset(token)

    return inject_faults


async def _observed(injector: FaultInjector, request: web.Request, handler: Handler) -> web.StreamResponse:
    """The request with its faults (if any), told to the observers (if any)."""
    if not (injector.rules or injector.observers):
        return await handler(request)
    info = classify(request.method, request.path, request.query)
    status = 0
    try:
        response = await _inject(injector, info, request, handler)
        status = response.status
        return response
    finally:
        for observer in list(injector.observers):
            observer(info, status)


async def _inject(
    injector: FaultInjector, info: RequestInfo, request: web.Request, handler: Handler
) -> web.StreamResponse:
    """The request's faults (if any rules fire), or the request as it is."""
    if not injector.rules:
        return await handler(request)
    lag = 0
    per_object = False
    held: lagging.Withholding | None = None
    lost_answer: Error | None = None  # the write is done, its answer replaced by this error
    preconditioned = await _preconditioned(request) if injector.needs_preconditions() else True
    for rule in injector.firing(info, preconditioned=preconditioned):
        effect = rule.effect
        if isinstance(effect, StaleRead) and effect.per_object:
            lag, per_object = max(lag, injector.lag(rule)), True
            injector.note(f"stale read (before the last {lag} change(s) of what is read): {info.method} {info.path}")
        elif isinstance(effect, StaleRead):
            lag = max(lag, injector.lag(rule))
            injector.note(f"stale read (-{lag} revisions): {info.method} {info.path}")
        elif isinstance(effect, WithholdEvents):
            held = lagging.Withholding(effect.delay, effect.coalesce, note=injector.note)
        elif isinstance(effect, Latency):
            await asyncio.sleep(effect.seconds)
        elif isinstance(effect, DropWatch):
            if effect.after <= 0:
                return await _dropped_stream(request, effect)
            request[_DROP_KEY] = effect
        elif isinstance(effect, Error) and effect.applied:
            lost_answer = effect
        elif isinstance(effect, Error):
            return _error_response(effect, info)
        elif isinstance(effect, Conflict):
            return _conflict_response(effect, info)
        elif isinstance(effect, ExpireWatch):
            return await _expired_response(request, effect)
    lag_token = lagging.read_lag.set(lag) if lag else None
    per_object_token = lagging.read_lag_per_object.set(True) if per_object else None
    held_token = lagging.withholding.set(held) if held is not None else None
    try:
        response = await handler(request)
    finally:
        if lag_token is not None:
            lagging.read_lag.reset(lag_token)
        if per_object_token is not None:
            lagging.read_lag_per_object.reset(per_object_token)
        if held_token is not None:
            lagging.withholding.reset(held_token)
    if lost_answer is not None and response.status < 400:
        return _error_response(lost_answer, info)
    crashing = injector.written(info, response.status)
    if crashing is not None:
        assert isinstance(crashing.effect, CrashAfterWrites)
        crashing.effect.crash()
        await _abort(request)  # the client is dead: the response never reaches it
    return response


async def _preconditioned(request: web.Request) -> bool:
    """Whether a write names the version it expects (see :func:`may_conflict`)."""
    if request.method not in ("PUT", "PATCH") or not request.body_exists:  # (read already by a tracer, perhaps)
        return False
    try:
        body = json.loads(await request.read())  # the body is kept: the handler reads it again
    except ValueError:
        return False
    return may_conflict(request.method, body)


def may_conflict(method: str, body: Any) -> bool:
    """Whether an apiserver could answer a write with a 409: a replacement (PUT) or a patch whose body names the
    resourceVersion it expects. Without one, a replacement of a built-in kind is unconditional (and one of a custom
    resource is invalid: 422), and a merge patch (e.g. kopf's status and progress patches, which carry only the
    uid) is applied to the latest version: no conflict, unless the object was re-created."""
    metadata = body.get("metadata") if method in ("PUT", "PATCH") and isinstance(body, dict) else None
    return isinstance(metadata, dict) and metadata.get("resourceVersion") is not None


def _dumps(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def _status_response(error: errors.ApiError) -> web.Response:
    response = web.Response(
        body=_dumps(error.to_status()), status=error.code, headers={"Content-Type": "application/json"}
    )
    response.headers.update(error.headers)
    return response


def _error_response(effect: Error, info: RequestInfo) -> web.Response:
    default_reason, default_message = _REASONS.get(effect.code, ("InternalError", "an injected fault"))
    headers: dict[str, str] = {}
    details: dict[str, Any] | None = None
    if effect.retry_after is not None:
        headers["Retry-After"] = str(effect.retry_after)
        details = {"retryAfterSeconds": effect.retry_after}
    if info.name is not None and info.resource is not None:
        details = {
            "name": info.name,
            **({"group": info.group} if info.group else {}),
            "kind": info.resource,
            **(details or {}),
        }
    error = errors.ApiError(
        effect.code,
        effect.reason or default_reason,
        effect.message or default_message,
        details=details,
        headers=headers,
    )
    return _status_response(error)


def _conflict_response(effect: Conflict, info: RequestInfo) -> web.Response:
    error = errors.conflict(info.resource or "", info.group or "", info.name or "")
    if effect.message is not None:
        error = errors.ApiError(409, "Conflict", effect.message, details=error.details)
    return _status_response(error)


def _expired_status() -> errors.ApiError:
    return errors.expired("The resourceVersion for the provided watch is too old.")


async def _expired_response(request: web.Request, effect: ExpireWatch) -> web.StreamResponse:
    if not effect.in_stream:
        return _status_response(_expired_status())
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    await response.write(_dumps({"type": "ERROR", "object": _expired_status().to_status()}))
    await response.write_eof()
    return response


async def _dropped_stream(request: web.Request, effect: DropWatch) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    if effect.abort:
        await _abort(request)
    else:
        await response.write_eof()
    return response


async def _abort(request: web.Request) -> None:
    """Reset the connection, once the bytes written so far had a chance to go out (as with TCP)."""
    await asyncio.sleep(0)
    if request.transport is not None:
        request.transport.abort()


async def _limit_watch_stream(request: web.Request, response: web.StreamResponse) -> None:
    """Wrap the stream's writes so that it ends after the allowed number of events (lines)."""
    effect = request.get(_DROP_KEY)
    if effect is None or isinstance(response, web.Response):
        return
    original: Callable[[bytes | bytearray | memoryview], Awaitable[None]] = response.write
    remaining = effect.after

    async def write(data: bytes | bytearray | memoryview) -> None:
        nonlocal remaining
        if remaining <= 0:
            raise ConnectionResetError("The watch stream was dropped by an injected fault.")
        chunk = bytes(data)
        lines = chunk.count(b"\n")
        if lines < remaining:
            remaining -= lines
            await original(chunk)
            return
        cut = 0
        for _ in range(remaining):
            cut = chunk.index(b"\n", cut) + 1
        remaining = 0
        await original(chunk[:cut])
        if effect.abort:
            await _abort(request)
        raise ConnectionResetError("The watch stream was dropped by an injected fault.")

    response.write = write  # type: ignore[method-assign]
