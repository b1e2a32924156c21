"""Fault plans derived from a fault-free reference run, as Sieve derives its test plans.

The reference run of an example's user actions is traced (:mod:`pytest_kopf._tracing`): every request the
operator makes (with the handler that made it), every change, every watch event it gets. Each place where
a fault could matter becomes a plan:

* ``crash-after-writes``: a crash right after each of the operator's successful writes;
* ``stale-answers``: a stale answer (the object or the list before its latest change) to each of its reads;
* ``event-pairs``: each pair of consecutive watch events of an object, the first held until the second comes:
  coalesced (the operator never sees the first state) or delivered late (it handles the older state while
  the cluster has the newer one); and the last event of each object (no next one ends its hold) delivered
  late, :data:`LATE_ALONE` seconds (an index of the operator's children that lags behind its own writes);
* ``relists``: the operator's watch ending with a 410 instead of each watch event of an object (a broken
  stream whose version has expired): kopf lists again and gets the object as listed, with the type ``None``
  (an event handler that acts on ``ADDED``/``MODIFIED`` only misses it);
* ``write-errors``: a 409 (updates), a burst of 500s (as many in a row as the ``retries`` check takes for
  hammering: an operator that retries at once is seen doing it), a 429, and a 504 after the write is done (its
  answer lost: a retry meets its own result, e.g. a create's "already exists") on each of its writes.

A plan is the fault as a step (:mod:`pytest_kopf.strategies.placed`), armed right before the user action in
whose course its target came (counting the matching requests or changes in between). Since the same actions
with the same seed give the same run up to the fault, it hits the same place in the planned run.

Plans whose point is equivalent to one already tried -- the same handler, the same request shape, the same
state of the object it handles and of the object it addresses (or, for events, the same pair of states) --
are pruned (:class:`Pruning`, across all the examples of a run of the checks).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
from collections.abc import Iterable, Sequence, Set

from kopf_sim.http.faults import RequestInfo, classify, may_conflict

from ._judges import HAMMERING
from ._tracing import Change, Delivery, Entry, Request, Response, Step, digest
from .strategies.placed import CrashAfterWrite, ExpiredAtEvent, FailedRequest, HeldEvent, StaleAnswer
from .strategies.steps import Action

__all__ = ["PLAN_KINDS", "Plan", "PlanFigures", "Pruning", "derive"]

#: The kinds of plans, and what each places.
PLAN_KINDS = {
    "crash-after-writes": "a crash right after each of the operator's writes",
    "stale-answers": "a stale answer (before the latest change) to each of its reads",
    "event-pairs": (
        "each pair of consecutive watch events of an object coalesced, or the first one late; the last one late"
    ),
    "relists": "the watch expiring (410) at each watch event of an object: kopf lists again, the object as listed",
    "write-errors": (
        f"a 409 (updates), {HAMMERING} 500s in a row, a 429, and a 504 after the write is done, on each of its writes"
    ),
}
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: The failures planned on each write (status, how many in a row, whether the write is done before it); the
#: first (a conflict) for updates only.
WRITE_ERRORS = ((409, 1, False), (500, HAMMERING, False), (429, 1, False), (504, 1, True))
#: Seconds that a held event waits for its object's next one, beyond when that came in the reference run.
HOLD_MARGIN = 5.0
#: At most this long (virtual seconds) is an event held.
HOLD_LIMIT = 300.0
#: How long (virtual seconds) the last event of an object is held (no next one ends its hold): longer than the
#: usual timers' intervals, so that a timer acting on a cache fed by the events (an index) acts on a stale one.
LATE_ALONE = 30.0
#: How long (virtual seconds) a failed write or a crash lasts in its effects (throttling, retries, the restart):
#: the users' actions within it are part of its point (the same fault before other actions is another point).
AFTERMATH = 10.0


@dataclasses.dataclass(frozen=True)
class Plan:
    """One fault placed in an example's user actions: armed before the user action at ``position``."""

    check: str
    kind: str
    position: int
    fault: Action
    #: What the fault hits, for pruning: the kind & variant, the handler, the request's shape, the states.
    point: tuple[str | None, ...]
    #: Whether the users act while the fault's effects last (then tried first: the faults' most telling places).
    interacting: bool = True

    def steps(self, users: Sequence[Action]) -> list[Action]:
        """The example's user actions with the fault in its place."""
        return [*users[: self.position], self.fault, *users[self.position :]]


@dataclasses.dataclass
class PlanFigures:
    """What one check's plans have come to, over all the examples of a run of the checks."""

    derived: int = 0
    pruned: int = 0  # equivalent to a plan tried before
    run: int = 0
    skipped: int = 0  # beyond the budget (per example, or in all)
    faults: int = 0  # injected in the planned runs
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0


class Pruning:
    """The points tried so far (in all the examples of one run of the checks): a plan at one of them is pruned."""

    def __init__(self) -> None:
        self.tried: set[tuple[str | None, ...]] = set()
        #: The places tried so far (the points without the states and the users' actions around them, see
        #: :func:`_place`): a plan at a place not tried yet comes before one at a place tried in other states.
        self.places: set[tuple[str | None, ...]] = set()
        #: The plans chosen for each example (by its user actions): the same ones when it runs again.
        self.chosen: dict[str, list[Plan]] = {}

    def fresh(self, plans: Iterable[Plan]) -> list[Plan]:
        """The plans at points not tried yet, each point once (not marked as tried: see :meth:`tried_now`)."""
        seen: set[tuple[str | None, ...]] = set()
        found: list[Plan] = []
        for plan in plans:
            key = (plan.check, *plan.point)
            if key not in self.tried and key not in seen:
                seen.add(key)
                found.append(plan)
        return found

    def tried_now(self, plan: Plan) -> None:
        self.tried.add((plan.check, *plan.point))
        self.places.add(_place(plan))

    def choose(
        self,
        example: str,
        plans: Sequence[Plan],
        figures: dict[str, PlanFigures],
        *,
        per_example: int,
        budget: int | None,
    ) -> list[Plan]:
        """The plans to run for one example: fresh ones, at most ``per_example`` of each check, ``budget`` in all.

        The figures of each check are counted: derived, pruned, and skipped (over the budget: their points may
        come again in a later example). Within the limit, they are taken in the order of their priority: the
        operator's own objects before k8s Events, the users acting meanwhile first, the first variants first.
        An example run again (e.g. hypothesis' replay of a failure) gets the plans chosen the first time.
        """
        if example in self.chosen:
            return self.chosen[example]
        chosen: list[Plan] = self.chosen.setdefault(example, [])
        for check in dict.fromkeys(plan.check for plan in plans):
            mine = [plan for plan in plans if plan.check == check]
            counts = figures.setdefault(check, PlanFigures())
            fresh = self.fresh(mine)
            counts.derived += len(mine)
            counts.pruned += len(mine) - len(fresh)
            left = per_example if budget is None else max(0, min(per_example, budget - counts.run))
            taken = _prioritized(fresh, tried=self.places)[:left]
            counts.skipped += len(fresh) - len(taken)
            for plan in taken:
                self.tried_now(plan)
            chosen.extend(taken)
        return chosen


#: The variants of a kind in the order they are tried: a conflict (kopf throttles and handles the object again)
#: before the errors that kopf's client retries by itself; the coalescing of a pair before its late delivery.
VARIANTS = {
    "409": 0,
    "504-after-write": 1,
    f"500x{HAMMERING}": 1,
    "429": 2,
    "coalesced": 0,
    "late": 1,
    "late-alone": 1,
}
#: The kinds of plans placed on watch events (the others on requests).
EVENT_KINDS = frozenset({"event-pairs", "relists"})


def _prioritized(plans: Sequence[Plan], *, tried: Set[tuple[str | None, ...]] = frozenset()) -> list[Plan]:
    """The plans in the order to try them: the operator's own objects before k8s Events (posted by kopf for
    its users, their failures ignored), those where the users act meanwhile first, the places not ``tried`` yet
    (in any state) before those tried in other states, the first variants of every place before the others, in
    the run's order."""

    def priority(plan: Plan) -> tuple[bool, bool, bool, int, int]:
        events = "/events" in str(plan.point[3]) if plan.kind not in EVENT_KINDS else False
        known = _place(plan) in tried
        return events, not plan.interacting, known, VARIANTS.get(str(plan.point[1]), 0), plan.position

    return sorted(plans, key=priority)


def _place(plan: Plan) -> tuple[str | None, ...]:
    """Where a plan's fault goes, whatever the states: its kind & variant, the handler and the request's shape (or
    the resource and the event's type). The points of one place differ in the states of the objects, which makes
    many of them: a place not tried yet says more than one more state of a place tried (e.g. a 504 after a write
    where only 409s have been tried)."""
    point = plan.point
    if plan.kind in EVENT_KINDS:
        return plan.check, point[0], point[1], point[2], str(point[3]).split("@", 1)[0]
    return plan.check, *point[:4]


@dataclasses.dataclass
class _Window:
    """The part of the reference run in the course of one user action: from its start to the next one's."""

    position: int
    counts: collections.Counter[tuple[str, ...]] = dataclasses.field(default_factory=collections.Counter)

    def count(self, key: tuple[str, ...]) -> int:
        """How many matching ones came before this one in the window (then this one is counted too)."""
        seen = self.counts[key]
        self.counts[key] += 1
        return seen


def derive(entries: Sequence[Entry], kinds: dict[str, Sequence[str]], *, skipped_steps: int = 0) -> list[Plan]:
    """The plans of a reference run's trace for the checks' plan kinds (``{check: kinds}``), in the run's order.

    ``skipped_steps``: the steps traced before the example's user actions (its machine's initial steps), where
    no fault can be armed before.
    """
    wanted = {kind: check for check, check_kinds in kinds.items() for kind in check_kinds}
    actions = [entry for entry in entries if isinstance(entry, Step)][skipped_steps:]
    plans: list[Plan] = []
    window: _Window | None = None
    steps = -1
    changes: dict[int, tuple[int, int]] = {}  # rv -> (position, how many changes of its object came before it)
    made_by_operator: set[int] = set()  # the versions that the operator's own writes made
    open_writes: collections.Counter[tuple[str | None, ...]] = collections.Counter()  # the operator's, in progress
    for entry in entries:
        if isinstance(entry, Step):
            steps += 1
            window = _Window(steps - skipped_steps) if steps >= skipped_steps else None
            continue
        if isinstance(entry, Request) and entry.method in WRITES and not entry.watch:
            open_writes[_addressed(entry)] += 1
        elif isinstance(entry, Response) and entry.request is not None and entry.method in WRITES:
            open_writes[_addressed(entry.request)] -= 1
        elif isinstance(entry, Change) and _by_operator(entry, open_writes):
            made_by_operator.add(entry.rv)
        if window is None:
            continue
        if isinstance(entry, Change):
            changes[entry.rv] = (window.position, window.count(("change", entry.resource, entry.where)))
        elif isinstance(entry, Request) and not entry.watch:
            plans.extend(_request_plans(entry, window, wanted, _aftermath(actions, entry.time)))
        elif isinstance(entry, Response) and entry.request is not None:
            plans.extend(_response_plans(entry, window, wanted, _aftermath(actions, entry.time)))
    if "event-pairs" in wanted:
        plans.extend(_event_plans(entries, wanted["event-pairs"], changes, made_by_operator))
    if "relists" in wanted:
        plans.extend(_relist_plans(entries, wanted["relists"], changes, made_by_operator))
    return sorted(plans, key=lambda plan: plan.position)


def _aftermath(actions: Sequence[Step], time: float) -> str | None:
    """The users' actions soon after a moment (while a fault's effects last), as a digest (None: none)."""
    soon = [action.code for action in actions if time < action.time <= time + AFTERMATH]
    return digest(soon) if soon else None


def _request_plans(request: Request, window: _Window, wanted: dict[str, str], after: str | None) -> list[Plan]:
    plans: list[Plan] = []
    skip = window.count(("request", request.method, request.path))
    shape = _shape(request)
    if request.method in WRITES and "write-errors" in wanted:
        for variant in WRITE_ERRORS if may_conflict(request.method, request.payload) else WRITE_ERRORS[1:]:
            status, count, applied = variant
            failed = FailedRequest(status, request.method, request.path, skip, count, applied)
            label = f"{status}-after-write" if applied else f"{status}x{count}" if count > 1 else str(status)
            point = ("write-errors", label, request.handler, shape, _cause(request), request.state, after)
            plans.append(
                Plan(wanted["write-errors"], "write-errors", window.position, failed, point, after is not None)
            )
    if request.method == "GET" and "stale-answers" in wanted and request.state not in (None, "absent"):
        stale = StaleAnswer(request.path, skip)
        where = ("stale-answers", None, request.handler, shape, _cause(request), request.state)
        plans.append(Plan(wanted["stale-answers"], "stale-answers", window.position, stale, where))
    return plans


def _response_plans(response: Response, window: _Window, wanted: dict[str, str], after: str | None) -> list[Plan]:
    request = response.request
    assert request is not None
    if request.method not in WRITES or response.status is None or response.status >= 400:
        return []
    skip = window.count(("written", request.method, request.path))
    if "crash-after-writes" not in wanted:
        return []
    fault = CrashAfterWrite(request.method, request.path, skip)
    point = ("crash-after-writes", None, request.handler, _shape(request), _cause(request), request.state, after)
    return [Plan(wanted["crash-after-writes"], "crash-after-writes", window.position, fault, point, after is not None)]


def _event_plans(
    entries: Sequence[Entry], check: str, changes: dict[int, tuple[int, int]], made_by_operator: set[int]
) -> list[Plan]:
    """A plan per pair of consecutive events of an object delivered to the operator (the first one held)."""
    deliveries: dict[tuple[str, str], list[Delivery]] = {}
    for entry in entries:
        if isinstance(entry, Delivery):
            deliveries.setdefault((entry.resource, entry.where), []).append(entry)
    by_object = {
        key: [entry for entry in entries if isinstance(entry, Change) and (entry.resource, entry.where) == key]
        for key in deliveries
    }
    plans: list[Plan] = []
    for (resource, where), events in deliveries.items():
        # The operator's own objects (its children): a watch of them that lags is a cache of the operator's that
        # does not show its own writes yet (an index, a memo kept by events): tried first, as the users' changes.
        made = any(change.type == "ADDED" and change.rv in made_by_operator for change in by_object[resource, where])
        for first, second in itertools.pairwise(events):
            if first.rv not in changes:
                continue
            position, skip = changes[first.rv]
            window, following, by_users = _hold_window(first, second, by_object[resource, where], made_by_operator)
            for coalesce in (True, False):
                fault = HeldEvent(resource, first.namespace, first.name, coalesce, window, skip)
                variant = "coalesced" if coalesce else "late"
                point = ("event-pairs", variant, resource, f"{first.type}@{first.state}", following)
                plans.append(Plan(check, "event-pairs", position, fault, point, by_users or made))
        last = events[-1]
        if last.rv in changes and last.type != "DELETED":  # no next event ends its hold: late by a while
            position, skip = changes[last.rv]
            fault = HeldEvent(resource, last.namespace, last.name, False, LATE_ALONE, skip)
            point = ("event-pairs", "late-alone", resource, f"{last.type}@{last.state}", None)
            plans.append(Plan(check, "event-pairs", position, fault, point, made))
    return plans


def _relist_plans(
    entries: Sequence[Entry], check: str, changes: dict[int, tuple[int, int]], made_by_operator: set[int]
) -> list[Plan]:
    """A plan per watch event delivered to the operator: its watch expires there (410), kopf lists again."""
    plans: list[Plan] = []
    for entry in entries:
        if not isinstance(entry, Delivery) or entry.rv not in changes:
            continue
        position, skip = changes[entry.rv]
        fault = ExpiredAtEvent(entry.resource, entry.namespace, entry.name, skip)
        point = ("relists", None, entry.resource, f"{entry.type}@{entry.state}")
        plans.append(Plan(check, "relists", position, fault, point, entry.rv not in made_by_operator))
    return plans


def _hold_window(
    first: Delivery, second: Delivery, changes: Sequence[Change], made_by_operator: set[int]
) -> tuple[float, str | None, bool]:
    """How long to hold the first event; the state of the event that will come next (to end the hold); whether
    that is a change by the users (or the cluster's controllers), not the operator's own.

    That is the pair's second one; but when the operator makes it itself (in reply to the first event, which it
    never gets while that is held), it never comes: the hold waits for the object's next change by the users
    (or the cluster's controllers), if any.
    """
    until, state = second.time, f"{second.type}@{second.state}"
    by_users = second.rv not in made_by_operator
    later = [change for change in changes if change.rv > first.rv and change.rv not in made_by_operator]
    if not by_users and later:
        until, state, by_users = max(until, later[0].time), f"{later[0].type}@{later[0].state}", True
    return round(min(HOLD_LIMIT, until - first.time + HOLD_MARGIN), 6), state, by_users


def _addressed(request: Request) -> tuple[str | None, ...]:
    """What a write addresses: its resource, namespace and object (None for a create in a collection)."""
    info = classify(request.method, request.path, {})
    return info.resource, info.namespace, info.name


def _by_operator(change: Change, open_writes: collections.Counter[tuple[str | None, ...]]) -> bool:
    """Whether a change was made by a write of the operator in progress (to its object, or its collection)."""
    return any(open_writes[change.plural, change.namespace, name] > 0 for name in (change.name, None))


def _cause(request: Request) -> str | None:
    """The state of the object that the handler handles (its name aside: the same state of another is the same)."""
    return request.cause.rsplit("@", 1)[-1] if request.cause else None


def _shape(request: Request) -> str:
    """A request's shape: method, path with names as ``*``, and what its body is (a kind, or a patch's fields)."""
    info = classify(request.method, request.path, {})
    path = _template(info) if info.resource is not None else request.path
    payload = request.payload
    if isinstance(payload, dict) and request.method in ("POST", "PUT"):
        body = str(payload.get("kind"))
    elif isinstance(payload, dict):
        body = ",".join(
            sorted(
                f"{key}.{sub}" if isinstance(value, dict) else key
                for key, value in payload.items()
                for sub in (value if isinstance(value, dict) and value else [""])
            )
        )
    else:
        body = json.dumps(sorted(part.split("=", 1)[0] for part in request.query.split("&") if part))
    return f"{request.method} {path} {body}"


def _template(info: RequestInfo) -> str:
    parts = ["api" if not info.group else f"apis/{info.group}", str(info.version)]
    if info.namespace is not None:
        parts.append("namespaces/*")
    parts.append(str(info.resource))
    if info.name is not None:
        parts.append("*")
    if info.subresource is not None:
        parts.append(info.subresource)
    return "/" + "/".join(parts)
