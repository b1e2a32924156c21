"""The judges of the checks: what each check looks at in a run whose actions are over, and what it finds wrong.

A judge is an async function of the run's :class:`Evidence` (its cluster and operator, its typed trace, its end
state, and the end state expected of it); it returns the details of what is wrong (``None``: nothing). The
catalogue (:mod:`pytest_kopf._catalogue`) says which judge is whose, and when it runs; the verdict
(:func:`pytest_kopf._verdicts.verify`) runs them in that order and raises the first failure.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from kopf_sim.timing.virtualtime import LivelockError

from . import _noise as noise
from ._bookkeeping import progress_record
from ._discovery import ResourceInfo
from ._history import handler_ids, history_masked
from ._noise import NoiseField
from ._observations import HistoryRecords, history_records, late_snapshots_aside, unseen_lifetimes, unseen_records_aside
from ._refusals import reports_error
from ._storms import STORM_FAILURE, RetryStorm
from ._tracing import Change, Entry, Fault, Log, Request, Response, Step
from .cluster import KopfCluster
from .driving import end_state, settle, tolerate
from .errors import KopfLeakError, OperatorCheckFailed
from .operator import KopfOperator

__all__ = [
    "HAMMERING",
    "Evidence",
    "Judge",
    "abandoned_daemons",
    "convergence",
    "difference",
    "early_retries",
    "hammered",
    "livelocked",
    "redelivered_unchanged",
    "retries",
    "stuck_finalizers",
]

#: Failed requests of the same method & path within one virtual second that count as hammering the API.
HAMMERING = 4
#: The log messages of kopf that tell of an unexpected exception in a handler or in the framework.
UNEXPECTED = (
    "failed with an exception",
    "failed with an unexpected error",
    "has failed unexpectedly",
    "A worker has failed unexpectedly",
)
ABANDONED = "it is abandoned"
#: How kopf tells that a handler's failure is retried (after its backoff).
RETRIED = "failed with an exception and will try again"
#: The packages of the API clients that operators use besides kopf's own: their exceptions are the API's answers.
CLIENT_PACKAGES = frozenset({"kubernetes", "kubernetes_asyncio", "pykube", "requests", "urllib3", "httpx"})


@dataclasses.dataclass
class Evidence:
    """What the judges of one run look at: the run's world, its trace, its end state and the one expected of it.

    ``expected``: the end state of the same user actions with no faults and no crashes (for the comparing
    checks); ``noise``: its fields that differ between two correct runs, masked in the comparisons.
    ``trace``: the run's typed trace (None: the judges that read it have nothing to read).
    ``records``: kopf's log records of the run. For the oracles (:mod:`pytest_kopf._oracles`): ``direct``, the end
    state of the driven objects created directly in their final state; ``created``, the uids of the objects that
    the operator created (None: not recorded), bar the ``retained`` patterns; ``correspondences``, the
    user-declared ones.
    """

    cluster: KopfCluster
    operator: KopfOperator
    resources: Sequence[ResourceInfo]
    namespace: str
    mask: Sequence[str]
    quiet: float
    settle_timeout: float
    records: Sequence[logging.LogRecord]
    trace: Sequence[Entry] | None = None
    logs_traced: bool = False  # whether the trace has the log records too (interleaved with the requests)
    expected: list[dict[str, Any]] | None = None
    direct: list[dict[str, Any]] | None = None
    created: set[str] | None = None
    retained: Sequence[str] = ()
    correspondences: Sequence[Any] = ()
    noise: Sequence[NoiseField] = ()
    settled: bool = False
    _state: list[dict[str, Any]] | None = None
    _deleted: bool = False

    @property
    def state(self) -> list[dict[str, Any]]:
        """The end state once the run has settled (see :func:`~pytest_kopf.driving.end_state`)."""
        if self._state is None:
            self._state = self.current_state()
        return self._state

    def current_state(self) -> list[dict[str, Any]]:
        return end_state(self.cluster, mask=self.mask)  # every namespace, and the cluster-scoped objects

    def history_aside(self, state: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """A state with how it was reached set aside (:mod:`pytest_kopf._history`): a fault may make the operator
        see two changes as one and write its children once instead of twice; the state must be the same."""
        kinds = [(resource.api_version, resource.kind) for resource in self.resources]
        labels = self.history_records.label_keys
        return history_masked(state, driven=kinds, handlers=handler_ids(self.operator), label_keys=labels)

    @functools.cached_property
    def history_records(self) -> HistoryRecords:
        """What records the run's history, from its trace (:mod:`pytest_kopf._observations`)."""
        return history_records(self.trace, self.operator, self.resources)

    @property
    def faulted(self) -> bool:
        return bool(self.cluster.sim.faults.injections) or bool(self.operator.crashes)

    def unhandled(self) -> list[str]:
        return _unhandled(self.cluster, self.operator, self.resources, self.namespace)

    async def settle(self, until: Callable[[], Awaitable[bool]] | None = None) -> bool:
        """Let the run settle until every object is handled (or ``until()`` holds); an endless loop fails it."""

        async def handled() -> bool:
            return not self.unhandled()

        try:
            return await settle(
                self.cluster, self.operator, quiet=self.quiet, timeout=self.settle_timeout, until=until or handled
            )
        except LivelockError as exc:
            raise livelocked(exc) from None

    async def delete_all(self) -> None:
        """Delete every object of the driven resources and let the run settle (once; later calls do nothing)."""
        if self._deleted:
            return
        self._deleted = True
        for resource in self.resources:
            for obj in _objects_of(self.cluster, resource, self.namespace):
                await tolerate(
                    self.cluster.delete(resource.qualified, obj["metadata"]["name"], obj["metadata"].get("namespace"))
                )

        async def gone() -> bool:
            return not any(_objects_of(self.cluster, r, self.namespace) for r in self.resources) and not (
                _alive_daemons(self.operator)
            )

        await self.settle(until=gone)


#: A judge: the details of what is wrong in the run (None: nothing).
Judge = Callable[[Evidence], Awaitable[str | None]]


def livelocked(error: LivelockError) -> OperatorCheckFailed:
    """An endless update loop as the checks report it: the operator does not settle (whichever check runs).

    A storm of retries (:class:`~pytest_kopf._storms.RetryStorm`) is the ``retries`` check's: no back-off.
    """
    if isinstance(error, RetryStorm):
        return OperatorCheckFailed("retries", f"{STORM_FAILURE}: {error.details}")
    return OperatorCheckFailed("convergence", f"the operator does not settle: {error}")


# -- the judges ----------------------------------------------------------------------------------------


async def convergence(evidence: Evidence) -> str | None:
    """Every live object handled in its latest state, deleted ones gone, no unexpected exception logged."""
    problems = evidence.unhandled()
    if not evidence.settled and not problems:
        problems = [f"the cluster keeps changing: no {evidence.quiet} s without changes in {evidence.settle_timeout} s"]
    problems.extend(_unexpected(evidence.records, faulted=evidence.faulted))
    return _listed(problems) if problems else None


def difference(evidence: Evidence) -> str | None:
    """The end state's difference from the expected one (the same user actions with no faults and no crashes),
    with the noise masked."""
    if evidence.expected is None or _refused_in(evidence.expected, evidence.resources):
        return None
    labels = ("expected (no faults, no crashes)", "actual")
    resumed = _resume_results(evidence)  # a restart (a crash, a re-delivery) runs them again
    expected, actual = (evidence.history_aside(resumed(state)) for state in (evidence.expected, evidence.state))
    kinds = [(resource.api_version, resource.kind) for resource in evidence.resources]
    actual = unseen_records_aside(actual, expected, driven=kinds, records=evidence.history_records)
    differs = noise.difference(expected, actual, evidence.noise, labels=labels)
    if differs is not None:  # (only then: it reads the whole trace) what a delayed snapshot holds, compared aside
        actual, expected = late_snapshots_aside(actual, expected, trace=evidence.trace, driven=kinds)
        differs = noise.difference(expected, actual, evidence.noise, labels=labels)
    if differs is None or unseen_lifetimes(
        evidence.trace or (), {(kind.group, kind.plural) for kind in evidence.resources}
    ):
        return None  # the operator never saw an object that the fault-free run saw: not comparable
    unsettled = "" if evidence.settled else f" (and it has not settled in {evidence.settle_timeout} s)"
    return (
        f"the end state differs from that of a run with no faults and no crashes{unsettled}:\n"
        f"{differs}{_masked(evidence.noise)}"
    )


def _refused_in(state: Sequence[Mapping[str, Any]], resources: Sequence[ResourceInfo]) -> bool:
    """Whether, with no faults and no crashes, the operator refuses a driven object's final spec in its status: then
    it may keep the last good state it has seen, and which one depends on the states it has seen (e.g. two changes
    seen as one after a retried write): not comparable. An error reported only with the faults is still a difference.
    """
    kinds = {(resource.api_version, resource.kind) for resource in resources}
    return any((obj.get("apiVersion"), obj.get("kind")) in kinds and reports_error(obj) for obj in state)


async def retries(evidence: Evidence) -> str | None:
    """No request hammered; no handler retried before its delay is over (if the trace has the log records)."""
    if evidence.trace is None:
        return None
    problems = hammered(evidence.trace)
    if not problems and evidence.logs_traced:
        problems = early_retries(evidence.trace, _loop_epoch())
    return _listed(problems) if problems else None


async def redelivered_unchanged(evidence: Evidence) -> str | None:
    """Re-delivering every object to a fresh operator (a graceful restart) changes nothing in the end state."""
    resumed = _resume_results(evidence)
    before = resumed(evidence.state)
    await evidence.operator.restart()
    await evidence.settle()
    again = resumed(evidence.current_state())
    before, again = evidence.history_aside(before), evidence.history_aside(again)
    changed = noise.difference(before, again, evidence.noise, labels=("before", "after re-delivering"))
    if changed is None:
        return None
    return (
        f"re-delivering every object to a fresh operator has changed the end state:\n{changed}{_masked(evidence.noise)}"
    )


def _resume_results(evidence: Evidence) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """What masks the results of the resume handlers in the driven objects' status (``status.<handler id>``).

    A fresh operator (after a crash, a re-delivery) runs its resume handlers again, by design, and kopf keeps what
    they return anew (e.g. the children as they are now, after a change since the creation, when a handler is both
    ``on.create`` and ``on.resume``, under one id): the record of a handler's latest run, not the end state.
    """
    from kopf import Reason

    registry = evidence.operator.registry
    handlers = registry.changing.get_all_handlers() if registry is not None else []
    ids = tuple(str(handler.id) for handler in handlers if getattr(handler, "reason", None) == Reason.RESUME)
    kinds = {(resource.api_version, resource.kind) for resource in evidence.resources}

    def masked(state: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not ids:
            return state
        result = []
        for obj in state:
            status = obj.get("status")
            if (obj.get("apiVersion"), obj.get("kind")) in kinds and isinstance(status, dict):
                kept = {k: v for k, v in status.items() if not any(k == i or k.startswith(f"{i}/") for i in ids)}
                obj = {**obj, "status": kept} if kept else {k: v for k, v in obj.items() if k != "status"}
            result.append(obj)
        return result

    return masked


async def stuck_finalizers(evidence: Evidence) -> str | None:
    """After every object is deleted and the run has settled, none is held by the operator's finalizer."""
    await evidence.delete_all()
    blocked = _blocked(evidence.cluster, evidence.operator, evidence.resources, evidence.namespace)
    if not blocked:
        return None
    return (
        f"{evidence.settle_timeout} s after all objects were deleted, "
        f"these are still held by the operator's finalizer:\n{_listed(blocked)}"
    )


async def abandoned_daemons(evidence: Evidence) -> str | None:
    """After every object is deleted: no daemon or timer alive or abandoned; the operator stops cleanly."""
    await evidence.delete_all()
    problems = _alive_daemons(evidence.operator)
    problems.extend(record.getMessage() for record in evidence.records if ABANDONED in record.getMessage())
    if problems:
        return f"after all objects were deleted and the operator got quiet:\n{_listed(problems)}"
    try:
        await evidence.operator.stop()
    except KopfLeakError as exc:
        return f"the operator has not stopped cleanly: {exc}"
    return None


# -- what the judges look at ----------------------------------------------------------------------------


def _objects_of(kopf_cluster: KopfCluster, resource: ResourceInfo, namespace: str) -> list[dict[str, Any]]:
    key = (resource.group, resource.plural)
    return list(kopf_cluster.sim.store.objects(key, namespace if resource.namespaced else None))


def _kopf_resource(resource: ResourceInfo) -> Any:
    from kopf import Resource

    return Resource(
        group=resource.group,
        version=resource.version,
        plural=resource.plural,
        kind=resource.kind,
        namespaced=resource.namespaced,
    )


def _unhandled(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator, resources: Sequence[ResourceInfo], namespace: str
) -> list[str]:
    """What is not handled yet: objects being deleted, objects not handled in their latest state, pending progress."""
    registry, settings = kopf_operator.registry, kopf_operator.settings
    if not kopf_operator.running or registry is None or settings is None:
        return [f"the operator is not running (exit code {kopf_operator.exit_code})"]
    problems: list[str] = []
    for resource in resources:
        problems.extend(_unhandled_objects(kopf_cluster, registry, settings, resource, namespace))
    return problems


def _unhandled_objects(
    kopf_cluster: KopfCluster, registry: Any, settings: Any, resource: ResourceInfo, namespace: str
) -> Iterable[str]:
    from kopf import Body
    from kopf._kits.testing import diff_objects, in_changing_scope

    kopf_resource = _kopf_resource(resource)
    handlers = registry.changing.get_resource_handlers(kopf_resource)
    unfiltered = any(
        handler.labels is None
        and handler.annotations is None
        and handler.when is None
        and handler.field is None
        and handler.reason is not None
        for handler in handlers
    )
    extra_fields = registry.changing.get_extra_fields(kopf_resource)
    finalizer = settings.persistence.finalizer
    for obj in _objects_of(kopf_cluster, resource, namespace):
        metadata = obj.get("metadata") or {}
        name = f"{resource.plural} {metadata.get('name')}"
        if metadata.get("deletionTimestamp"):
            holders = ", ".join(metadata.get("finalizers") or ()) or "nothing"
            mine = " (the operator's own)" if finalizer in (metadata.get("finalizers") or ()) else ""
            yield f"{name}: deleted, but still there, held by {holders}{mine}"
            continue
        pending = sorted(
            key for key, value in (metadata.get("annotations") or {}).items() if progress_record(value) is not None
        )
        body = Body(obj)
        if pending:
            details = "; ".join(f"{key.split('/', 1)[1]}: {_progress(body, key)}" for key in pending)
            yield f"{name}: handling is still in progress ({details})"
            continue
        if not handlers:
            continue
        diffbase = settings.persistence.diffbase_storage
        progress = settings.persistence.progress_storage
        stored = diffbase.fetch(body=body)
        if stored is None:
            if unfiltered:
                yield f"{name}: never handled"
            continue
        old = progress.clear(essence=stored)
        new = progress.clear(essence=diffbase.build(body=body, extra_fields=extra_fields))
        changed = diff_objects(old, new)
        if changed and in_changing_scope(registry, kopf_resource, body):  # kopf leaves the others alone
            fields = ", ".join(".".join(item[1]) or "(root)" for item in changed)
            yield f"{name}: its latest state is not handled (differs from the last handled one in {fields})"


def _progress(body: Any, key: str) -> str:
    raw = (body.metadata.annotations or {}).get(key, "")
    record = _json(raw)
    if not isinstance(record, dict):
        return str(raw)[:100]
    parts = [
        f"{field}={record[field]!r}"
        for field in ("retries", "message", "failure", "delayed")
        if record.get(field) not in (None, False, "")
    ]
    return ", ".join(parts) or "started"


def _unexpected(records: Iterable[Any], *, faulted: bool = False) -> list[str]:
    """The unexpected exceptions logged. Not those of the API (any client's) that kopf retries: the cluster's answer
    to a passing state (a namespace being terminated, a conflict), and whether the retries end it is judged by the
    objects' handling; with faults injected, no API error at all (the faults' own doing)."""
    found: list[str] = []
    for record in records:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if _api_error(error) and (faulted or RETRIED in message):
            continue
        if message.startswith("Failed to post an event"):
            continue  # a k8s Event about a handler, not a handler's failure (its text may quote one)
        if any(marker in message for marker in UNEXPECTED):
            ref = getattr(record, "k8s_ref", None)
            where = f"{ref.get('name')}: " if isinstance(ref, dict) else ""
            suffix = f" ({error!r})" if error is not None else ""
            found.append(f"{where}{message}{suffix}")
    return list(dict.fromkeys(found))


def _api_error(error: BaseException | None) -> bool:
    """Whether an exception is an API client's: kopf's, aiohttp's, a timeout, or one of a client library's own
    (the official client's ``ApiException``, pykube's ``HTTPError``, requests' and urllib3's errors...)."""
    import aiohttp

    from kopf._kits.testing import APIError

    if isinstance(error, APIError | aiohttp.ClientError | TimeoutError | ConnectionError):
        return True
    return error is not None and type(error).__module__.partition(".")[0] in CLIENT_PACKAGES


#: The failed requests that are answers, not failures: a create of what exists, a read or a delete of what does not.
_ANSWERS = frozenset({("POST", 409), ("GET", 404), ("DELETE", 404)})


def hammered(entries: Iterable[Entry]) -> list[str]:
    """Failed requests sent again :data:`~pytest_kopf._judges.HAMMERING` times in one virtual second (watches aside).

    A create answered "already exists" (409) is not a failure: operators create-or-patch their children; nor is a
    read answered "not found" (404): operators look their children up before making them (pykube's ``exists()``);
    nor a delete answered "not found": operators delete what should not be there, whether it is or not.
    A request counts in the second of its response (cut off: failed too), as the same request again only if the
    same handler of the same object sent it (when known) with the same object to create: several objects' or
    handlers' first tries at one collection (a 500 on all Services' creates) are not one request retried.
    """
    counts: collections.Counter[tuple[int, str, tuple[str | None, ...]]] = collections.Counter()
    for entry in entries:
        if not isinstance(entry, Response) or entry.request is None or entry.request.watch:
            continue
        if entry.status is not None and 0 < entry.status < 400:
            continue
        if (entry.method, entry.status) in _ANSWERS:  # "already exists", "not found": answers, not failures
            continue
        counts[int(entry.time), f"{entry.method} {entry.path}", _sender(entry.request)] += 1
    return [
        f"{method_path}: failed {count} times within the second {second}, retried with no back-off"
        for (second, method_path, _), count in sorted(counts.items(), key=lambda item: item[0][:2])
        if count >= HAMMERING
    ]


def _sender(request: Request) -> tuple[str | None, ...]:
    """Who sent a request and what it is about: its handler, the object handled (not its state), the name posted,
    and the object meant (by uid: a namesake made anew is another object, e.g. kopf's first patch of each): the one
    that the body names as a precondition, else the one addressed."""
    handled = request.cause.rpartition("@")[0] or request.cause if request.cause else None
    payload = request.payload
    found = payload.get("metadata") if isinstance(payload, dict) else None
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    posted: str | None = None
    if request.method == "POST":
        posted = str(metadata.get("name") or metadata.get("generateName") or "") or None
    addressed = request.addressed
    # The object its body names first (kopf's patches name it as a precondition: the handling of a deleted object
    # patches its successor in vain, answered 409, and so does the next one's; each its own object), else the
    # object there when the request came (None: absent; a tuple: a list).
    uid = metadata.get("uid")
    if not uid and isinstance(addressed, Mapping):
        uid = (addressed.get("metadata") or {}).get("uid")
    return request.handler, handled, posted, str(uid) if uid else None


def early_retries(entries: Iterable[Entry], epoch: datetime.datetime | None) -> list[str]:
    """Handlers called again before the delay that their progress record had set (read from the trace)."""
    if epoch is None:
        return []
    due: dict[tuple[str, str], float] = {}  # (namespace/name, handler id) -> the loop time of the delay's end
    # The delays being written, by the patch's path: they count once the cluster has accepted the patch (a delay
    # whose write has failed is not stored anywhere; kopf then processes the object again after throttling).
    writing: dict[str, dict[tuple[str, str], float | None]] = {}
    stale = False  # whether the cluster has shown an older state (a stale read, events withheld) in this run
    found: list[str] = []
    for entry in entries:
        if isinstance(entry, Fault) and entry.description.startswith(STALE_VIEWS):
            stale = True
        elif isinstance(entry, Change) and entry.type == "DELETED":  # a new object of that name starts anew
            for pending in [pending for pending in due if pending[0] == entry.where]:
                del due[pending]
        if stale and _restarting(entry):
            # A fresh operator that reads an older state (a stale list, or events held back) cannot know of the
            # delays stored after it: it runs the handlers at once. That is the stale view's doing, not a retry's.
            due.clear()
            writing.clear()
        if isinstance(entry, Request) and entry.method == "PATCH":
            delays = _delays(entry, epoch)
            if delays:
                writing.setdefault(entry.path, {}).update(delays)
        elif isinstance(entry, Response) and entry.method == "PATCH":
            delays = writing.pop(entry.path, {})
            if entry.status is not None and 200 <= entry.status < 300:
                due.update((key, deadline) for key, deadline in delays.items() if deadline is not None)
                for purged in (key for key, deadline in delays.items() if deadline is None):
                    due.pop(purged, None)
        elif isinstance(entry, Log) and entry.where is not None and entry.message.startswith("Handler '"):
            handler = entry.message.split("'", 2)[1]
            deadline = due.pop((entry.where, handler), None)
            if deadline is not None and entry.time < deadline - 0.001:
                found.append(
                    f"{entry.where}: handler {handler!r} was called again at {entry.time:.3f} s, "
                    f"before its retry delay was over (at {deadline:.3f} s)"
                )
    return found


#: The faults that show the operator an older state of the cluster than the latest one.
STALE_VIEWS = ("stale read", "withhold events", "hold event")


def _restarting(entry: Entry) -> bool:
    """Whether an entry tells of the operator being replaced by a fresh one (crashed, or restarted)."""
    if isinstance(entry, Fault):
        return entry.description.startswith("crash after write")
    return isinstance(entry, Step) and entry.restarts


def _delays(request: Request, epoch: datetime.datetime) -> dict[tuple[str, str], float | None]:
    """The retry delays that a kopf patch of an object's progress stores: by (namespace/name, handler id); None for
    a progress record that it removes (kopf purges it when the change it was for is gone, e.g. reverted by the
    user: the next change starts a new cycle, whose handlers run at once)."""
    parts = request.path.split("/")
    if parts[-1] == "status":
        parts = parts[:-1]
    where = f"{parts[parts.index('namespaces') + 1]}/{parts[-1]}" if "namespaces" in parts else parts[-1]
    delays: dict[tuple[str, str], float | None] = {}
    for key, value in request.annotations().items():
        record = progress_record(value)
        if value is None and "/" in key:  # a purge, if it is a record's (only the delays known are ended by it)
            delays[where, key.rsplit("/", 1)[1]] = None
        elif (
            isinstance(record, dict)
            and record.get("delayed")
            and not record.get("success")
            and not record.get("failure")
        ):
            delayed = datetime.datetime.fromisoformat(str(record["delayed"]))
            delays[where, key.split("/", 1)[1]] = (delayed - epoch).total_seconds()
    return delays


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _loop_epoch() -> datetime.datetime | None:
    import asyncio

    return getattr(asyncio.get_running_loop(), "epoch", None)


def _blocked(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator, resources: Sequence[ResourceInfo], namespace: str
) -> list[str]:
    settings = kopf_operator.settings
    finalizer = settings.persistence.finalizer if settings is not None else "kopf.zalando.org/KopfFinalizerMarker"
    return [
        f"{resource.plural} {obj['metadata']['name']} (finalizers: {', '.join(obj['metadata']['finalizers'])})"
        for resource in resources
        for obj in _objects_of(kopf_cluster, resource, namespace)
        if finalizer in (obj["metadata"].get("finalizers") or ())
    ]


def _alive_daemons(kopf_operator: KopfOperator) -> list[str]:
    return [
        f"{task.get_name()} is still running"
        for task in kopf_operator.pending_tasks()
        if task.get_name().startswith(("daemon '", "timer '"))
    ]


def _listed(items: Sequence[str]) -> str:
    return "\n".join(f"  - {item}" for item in items)


def _masked(fields: Sequence[NoiseField]) -> str:
    if not fields:
        return ""
    learned = noise.described(fields)
    return f"\n(masked as {noise.MASKED}, learned as nondeterministic from two fault-free runs: {learned})"
