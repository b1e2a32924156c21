"""Driving an operator under test through actions: the helpers that generated reproductions call too.

* :func:`tolerate`: an action on an object that may be gone or already there, or refused (404/409/410/422 are
  no-ops; :func:`attempt` tells the :class:`Refusal`);
* :func:`caught_up`: after a step, let the operator do all it can at this moment (its events processed);
* :func:`crash_after`: kill the operator right after its k-th successful write, restart it a bit later;
* :func:`settle`: let virtual time pass until the operator is quiet (no changes in the cluster but
  k8s Events for a while) and a condition holds, or a time limit passes;
* :func:`end_state`: every object of the cluster (k8s Events aside), with the fields that differ from run to
  run masked (uids, versions, timestamps, managed fields, kopf's bookkeeping), for comparing two runs.

Sim mode only (they read the simulated cluster directly, and crashes need its faults).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import fnmatch
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import kopf
from kopf_sim.http.faults import RequestInfo
from kopf_sim.kube.objects import clone
from kopf_sim.recording.apiclient import ApiFailure
from kopf_sim.recording.replaying import ReplayError
from kopf_sim.store.watching import Change

from ._bookkeeping import without_bookkeeping
from ._history import left_by_statefulsets
from ._noise import only_timestamps_changed
from ._scheduled import scheduled_calls
from .cluster import KopfCluster, SimKopfCluster
from .errors import KopfApiError
from .operator import KopfOperator

__all__ = [
    "DEFAULT_QUIET",
    "DEFAULT_RESTART_DELAY",
    "DEFAULT_SETTLE_TIMEOUT",
    "REFUSALS",
    "Refusal",
    "attempt",
    "caught_up",
    "crash_after",
    "end_state",
    "mask_object",
    "record_requests",
    "settle",
    "tolerate",
    "without_bookkeeping",
]

_T = TypeVar("_T")

#: Virtual seconds with no changes in the cluster (k8s Events aside) for the operator to count as quiet.
DEFAULT_QUIET = 30.0
#: Virtual seconds after the actions within which the operator must get quiet (and the checks' conditions hold).
DEFAULT_SETTLE_TIMEOUT = 900.0
#: Virtual seconds between a crash and the restart (as a pod's restart takes a moment).
DEFAULT_RESTART_DELAY = 1.0
#: How often (virtual seconds) settling looks at the quietness and the condition.
SETTLE_STEP = 5.0

#: The virtual time that one step of a machine (or of its reproduction) ends with: one tick of the clock.
STEP_PAUSE = 1e-6

#: The kinds whose changes do not count against quietness: kopf posts Events about its handlers' runs.
EVENT_KEYS = frozenset({("", "events"), ("events.k8s.io", "events")})

#: The CustomResourceDefinitions: their status is the apiserver's own, not an operator's outcome.
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
VOLATILE_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
)

_revivals: weakref.WeakKeyDictionary[KopfOperator, asyncio.Task[None]] = weakref.WeakKeyDictionary()


#: The API errors that refuse a user's action as the cluster stands (the action is a no-op then): "not found",
#: "already exists" or "conflict", "gone", and "invalid" (e.g. a generated patch that the schema or a rule refuses).
REFUSALS = frozenset({404, 409, 410, 422})


@dataclasses.dataclass(frozen=True)
class Refusal:
    """The cluster's refusal of a user's action (one of :data:`REFUSALS`): a no-op step.

    Any two refusals are the same outcome (the action was a no-op in both runs that are compared, whatever
    the reason); the code, reason and message are for the reports.
    """

    code: int = dataclasses.field(compare=False)
    reason: str = dataclasses.field(compare=False)
    message: str = dataclasses.field(default="", compare=False)

    def __str__(self) -> str:
        return f"refused ({self.code} {self.reason}, tolerated)"


async def attempt(action: Awaitable[_T]) -> _T | Refusal:
    """Do an action on an object; its :class:`Refusal` if the cluster refuses it as it stands (see :func:`tolerate`)."""
    try:
        return await action
    except KopfApiError as exc:
        if exc.code in REFUSALS:
            return Refusal(exc.code, exc.reason, exc.message)
        raise
    except ReplayError as exc:  # a replayed change refused the same way (e.g. its object is there already)
        cause = exc.cause
        if isinstance(cause, KopfApiError | ApiFailure) and cause.code in REFUSALS:
            return Refusal(cause.code, cause.reason, cause.message)
        raise


async def tolerate(action: Awaitable[_T]) -> _T | None:
    """Do an action on an object, but take the cluster's refusals of it as no-ops (None).

    Generated sequences meet objects that are not there (404: deleted, or never created), or already are
    (409), and make patches that the object's schema or rules refuse (422: e.g. a value out of its range);
    so does a replayed log (:class:`kopf_sim.recording.replaying.ReplayError` with such an error is a no-op too).
    """
    result = await attempt(action)
    return None if isinstance(result, Refusal) else result


def record_requests(kopf_cluster: KopfCluster) -> list[str]:
    """A list that gets a line per request to the cluster from now on: ``<time> request <method> <path> <status>``.

    The status is that of the response (0 if there was none). The test's own requests (through
    ``kopf_cluster``) do not go through there: these are the operator's.
    """
    loop = asyncio.get_running_loop()
    lines: list[str] = []

    def observe(info: RequestInfo, status: int) -> None:
        watch = "?watch=true" if info.watch else ""
        lines.append(f"{loop.time():.6f} request {info.method} {info.path}{watch} {status}")

    kopf_cluster.sim.faults.observers.append(observe)
    return lines


def crash_after(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    *,
    writes: int,
    restart_delay: float = DEFAULT_RESTART_DELAY,
    **criteria: Any,
) -> None:
    """Crash the operator right after its ``writes``-th successful write from now on; restart it a bit later.

    ``criteria`` narrow the writes that count (as the faults' rules do: ``resource=``, ``method=``...).
    The write itself is done; the operator never learns of it (as when killed between the write and
    the response). The restart, ``restart_delay`` virtual seconds later, starts a fresh operator.
    """

    def crash() -> None:
        kopf_operator.crash()
        loop = kopf_operator.loop or asyncio.get_running_loop()  # (the request may be served by another loop)
        _revivals[kopf_operator] = loop.create_task(
            _revive(kopf_operator, restart_delay),
            name="restart of a crashed kopf operator",
            context=contextvars.Context(),
        )  # not the dead one's task

    kopf_cluster.sim.faults.crash_after(writes, crash, **criteria)


async def _revive(kopf_operator: KopfOperator, delay: float) -> None:
    await asyncio.sleep(delay)
    if not kopf_operator.running:  # unless the test has restarted it meanwhile
        await kopf_operator.restart()


async def caught_up(kopf_operator: KopfOperator | None = None) -> None:
    """End a step: the operator processes what the step has caused, as far as it can at this moment.

    Under virtual time, the clock moves (by one tick) only when nothing else is left to run, so the state
    after it does not depend on how many loop cycles the step itself took: a machine's steps (each a run of
    the loop of its own) and the same steps in a reproduction (one coroutine) end in the same state.

    With ``kopf_operator``: if it has crashed during the step (:func:`crash_after`), the step ends once it is
    back and has caught up too. The users' next action comes after the restart, not while the operator is
    down: a kopf operator is edge-triggered, and a spec changed and changed back while it is down, after a
    crash between a handler's writes and kopf's record of the change as handled, is no change to the fresh
    operator. That is kopf's own hazard (the handler's results are written first, then the change is marked
    handled), not a bug of the operator's code; the crash-right-after-a-write plans are about the latter.
    Likewise, a handler that a fault injected during the step has failed is retried before the step ends.
    """
    await asyncio.sleep(STEP_PAUSE)
    if kopf_operator is not None:
        await _back(kopf_operator)
        await _retried(kopf_operator)


async def _back(kopf_operator: KopfOperator) -> None:
    """Wait until the operator is back after its crashes: a restarted one that crashes again while catching up
    (another crash planned after its first write) is waited for again."""
    while kopf_operator in _revivals:
        await revived(kopf_operator)
        await asyncio.sleep(STEP_PAUSE)


#: The virtual seconds that a step waits at most for the retries of the handlers that a fault has failed.
RETRY_WAIT_LIMIT = 300.0

#: How many faults each operator's cluster had injected when its latest step ended.
_faults_seen: weakref.WeakKeyDictionary[KopfOperator, int] = weakref.WeakKeyDictionary()


async def _retried(kopf_operator: KopfOperator) -> None:
    """If a fault was injected during the step, wait for the retries of the handlers that it has failed.

    A fault (an error answer, a write applied but answered 504, a crash) fails a handler, which kopf retries after
    its backoff (60 s by default). The users' next action comes after that retry, not while it is pending: kopf is
    edge-triggered, and a spec changed and changed back before the retry is no change to kopf (the object is as
    last handled: the pending retry is dropped), while the failed handler's write may have landed. That is kopf's
    own hazard, as with a crash, not a bug of the operator's code. After a step with no fault injected, nothing is
    waited for (e.g. the operator's own ``kopf.TemporaryError`` delays): the runs with no faults are as they were.
    """
    cluster = kopf_operator.cluster
    if not isinstance(cluster, SimKopfCluster):
        return
    injections = cluster.sim.faults.injections
    seen = _faults_seen.get(kopf_operator, 0)
    loop = asyncio.get_running_loop()
    limit = loop.time() + RETRY_WAIT_LIMIT
    while len(injections) != seen:  # a fault since the latest look: its failures are retried first
        await _back(kopf_operator)  # (a crash is a fault too)
        seen = len(injections)
        memories = kopf_operator.memories if kopf_operator.running else None
        pending = [m.delayed_until for m in memories.iter_all_memories()] if memories is not None else []
        due = min((moment for moment in pending if moment is not None), default=None)
        if due is None or due > limit:
            break
        await asyncio.sleep(max(due - loop.time(), 0) + STEP_PAUSE)
        await asyncio.sleep(STEP_PAUSE)
    await _back(kopf_operator)  # the retry's write may have crashed it
    _faults_seen[kopf_operator] = len(injections)


async def revived(kopf_operator: KopfOperator) -> None:
    """Wait for a pending restart after a crash (if any); raise its error if it has failed."""
    task = _revivals.pop(kopf_operator, None)
    if task is not None:
        await task


async def settle(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator | None = None,
    *,
    quiet: float = DEFAULT_QUIET,
    timeout: float = DEFAULT_SETTLE_TIMEOUT,
    until: Callable[[], Awaitable[bool] | bool] | None = None,
) -> bool:
    """Let virtual time pass until nothing changes for ``quiet`` seconds and ``until()`` (if given) is true.

    Returns whether that happened within ``timeout`` virtual seconds. A restart pending after a crash
    is waited for first. The calls that the operator has scheduled within the timeout (a timer's or a daemon's
    retry after its backoff, an initial delay, the delayed handlers of an object: :mod:`pytest_kopf._scheduled`)
    are waited for too, and so is what the cluster's built-in controllers have scheduled within it (a finished Job's
    deletion after its ``ttlSecondsAfterFinished``, a pod's start; CronJobs' schedules aside). Changes that only
    refresh timestamps do not count (an object whose only changes are
    timestamps has settled, see :func:`pytest_kopf._noise.only_timestamps_changed`); nor do changes of k8s
    Events: kopf posts them as handlers run. Events withheld from a watcher (by a fault) count as changes until
    they are delivered (and a timer is called once more after that). An object that keeps changing with no
    virtual time passing (an endless update loop, which no deadline would ever end) raises
    :class:`~kopf_sim.timing.virtualtime.LivelockError` naming it and its last changes
    (:class:`~pytest_kopf.simcontrols.InstantGuard`).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_change = loop.time()  # of the cluster's content, or of something as good as one (a restart, events held)
    # The cluster's content changes (loop time, resource version; "" for as good as one: the start, events held
    # back): the timers' calls must have seen them (begun after them, or made them by their own patch).
    contents: list[tuple[float, str]] = [(loop.time(), "")]
    refreshed: set[int] = set()  # the revisions that only refreshed timestamps (also when held back from watchers)
    was_held = False  # whether changes were held back from a watcher when settling looked last
    faults = kopf_cluster.sim.faults
    stale_seen = faults.stale_answers  # how many stale answers the operator has had so far
    faulted_seen = len(faults.injections)  # how many faults have been injected so far

    def observe(change: Change) -> None:
        nonlocal last_change
        if change.key in EVENT_KEYS:
            return
        if _refreshed(change):
            refreshed.add(change.rv)
        else:
            last_change = loop.time()
            contents.append((last_change, str(change.rv)))
            del contents[:-CONTENTS_KEPT]

    guard = kopf_cluster.sim.guard
    observers = kopf_cluster.sim.store.observers
    observers.append(observe)
    try:
        while True:
            if kopf_operator is not None and kopf_operator in _revivals:
                await revived(kopf_operator)
                last_change = loop.time()
            now = loop.time()
            # Not quiet while a watcher is kept from the latest changes (unless they only refresh timestamps);
            # when they reach it (or are coalesced away), the operator sees them now, not when they were made:
            # a timer's call meanwhile has handled what it had seen before, so its next call is waited for.
            held = bool(kopf_cluster.sim.store.withheld_revisions() - refreshed)
            if held or was_held:
                last_change = now
                contents.append((now, ""))
            # A stale answer (a fault) has shown the operator an older state: its timers' calls since then have not
            # seen the latest one, so the next call of each is waited for (a level-triggered timer heals it).
            stale_now = faults.stale_answers
            if stale_now != stale_seen:
                stale_seen = stale_now
                contents.append((now, ""))
            # A fault has just answered the operator (an error instead of its write, a lost answer): it retries in
            # its own time (a daemon's next poll, a client's back-off), so the quiet period starts again; else a
            # daemon whose writes failed a few times would be judged settled by how its thread was scheduled.
            if len(faults.injections) != faulted_seen:
                faulted_seen = len(faults.injections)
                last_change = now
            was_held = held
            # A retry, a delayed handler, a timer's first call (or its first since the last change) to wait for:
            waiting = kopf_operator is not None and any(
                call.due <= deadline and call.awaited(contents) for call in scheduled_calls(kopf_operator)
            )
            # And what the cluster's controllers have scheduled (a finished Job deleted after its TTL, a pod started
            # or ready after its delay): the run is not over until it is done (CronJobs' schedules aside: endless).
            waiting = waiting or any(due <= deadline for due in kopf_cluster.sim.controllers.pending())
            if now - last_change >= quiet and not waiting:
                condition = until() if until is not None else True
                if isinstance(condition, Awaitable):
                    condition = await condition
                if condition:
                    return True
            if now >= deadline:
                return False
            step = min(SETTLE_STEP, max(deadline - now, 0.001))
            await (guard.pause(step) if guard is not None else asyncio.sleep(step))
    finally:
        observers.remove(observe)


#: How many of the latest content changes settling keeps for the timers (their calls are checked against them).
CONTENTS_KEPT = 64


def _refreshed(change: Change) -> bool:
    """Whether a change only refreshes timestamps (e.g. a timer's ``lastReconciled``): noise, not activity."""
    return change.type == "MODIFIED" and change.old is not None and only_timestamps_changed(change.old, change.obj)


def end_state(
    kopf_cluster: KopfCluster, *, namespace: str | None = None, mask: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Every object that an operator can touch (k8s Events aside) with the volatile fields masked, sorted.

    All namespaces and the cluster-scoped objects; with ``namespace``, only the namespaced objects of that
    namespace. The simulator's own objects as they were at the cluster's start (nodes, the default namespaces,
    their service accounts...: the same in every run) are left out while untouched; once changed, they are in,
    and once deleted, they are in as ``{..., "deleted": True}``. What the cluster keeps as the history of its
    controllers is left out too: a StatefulSet's revisions, and the claims that a deleted StatefulSet has left
    (made and written by the cluster only, kept by the default retention policy). CRDs are in without their
    status (the apiserver's).
    ``mask``: more fields to mask, as dotted paths with ``*`` for any key (``status.*.updated``).
    """
    sim = kopf_cluster.sim
    store = sim.store
    seen: set[tuple[str, str]] = set()
    objects: list[dict[str, Any]] = []
    generated: dict[str, str] = {}  # the names drawn by the cluster (generateName) and their masked forms
    bootstrap = dict(sim.bootstrap)
    left_claims = left_by_statefulsets(store.objects(CLAIMS_KEY), store.objects(STATEFULSETS_KEY))
    for rtype in sorted(store.catalogue, key=lambda t: (t.group, t.plural, not t.preferred)):
        if rtype.storage_key in seen or rtype.storage_key in EVENT_KEYS:
            continue
        if namespace is not None and not rtype.namespaced:
            continue
        seen.add(rtype.storage_key)
        for obj in store.objects(rtype.storage_key, namespace):
            metadata = obj["metadata"]
            if bootstrap.pop((rtype.storage_key, metadata.get("namespace"), metadata["name"]), None) is obj:
                continue  # as it was at the cluster's start (objects are stored anew on every change)
            if rtype.storage_key == REVISIONS_KEY and metadata.get("ownerReferences"):
                continue  # a StatefulSet's or DaemonSet's history: one per template it has had, however reached
            if rtype.storage_key == CLAIMS_KEY and (metadata.get("namespace") or "", metadata["name"]) in left_claims:
                continue  # a deleted StatefulSet's claims, kept by its retention policy: the cluster's, derived
            masked = mask_object(store.present(obj, rtype), mask, settings=sim.operator_settings)
            generated |= drawn_values(obj)
            if rtype.storage_key == CRD_KEY:
                masked.pop("status", None)  # the apiserver's own (accepted names, conditions stamped at creation)
            objects.append(masked)
    for (key, obj_namespace, name), obj in bootstrap.items():
        if key not in seen or (namespace is not None and obj_namespace != namespace):
            continue
        metadata = {"name": name, **({"namespace": obj_namespace} if obj_namespace else {})}
        objects.append(
            {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": metadata, "deleted": True}
        )
    if generated:
        mask_drawn_values(objects, generated)
    return sorted(objects, key=_sort_key)


REVISIONS_KEY = ("apps", "controllerrevisions")
CLAIMS_KEY = ("", "persistentvolumeclaims")
STATEFULSETS_KEY = ("apps", "statefulsets")


def drawn_values(obj: Mapping[str, Any]) -> dict[str, str]:
    """What the cluster drew for an object, and its masked form: a generated name (as :func:`mask_object` masks it),
    a pod's IP (where the operator copies it, it is noise)."""
    metadata = obj.get("metadata") or {}
    drawn: dict[str, str] = {}
    if metadata.get("generateName"):
        drawn[str(metadata["name"])] = f"{metadata['generateName']}*"
    pod_ip = (obj.get("status") or {}).get("podIP") if obj.get("kind") == "Pod" else None
    if isinstance(pod_ip, str) and pod_ip:
        drawn[pod_ip] = "<pod IP>"
    return drawn


def mask_drawn_values(objects: list[dict[str, Any]], generated: dict[str, str]) -> None:
    """Mask the names drawn by the cluster wherever the objects name them, as the generated objects' names are.

    An operator names its objects after the cluster's (e.g. a Job ``probe-<pod>`` for each pod of a Deployment,
    whose names end with random suffixes, drawn in the order of creation): in any string of the objects
    (names, labels, owners' references, a container's arguments), a generated name becomes its masked form,
    and a pod's IP (drawn by the cluster too) ``<pod IP>``.
    """
    pattern = re.compile(
        "|".join(
            rf"(?<![\d.]){re.escape(name)}(?!\d)" if name[:1].isdigit() else re.escape(name)  # an IP: whole
            for name in sorted(generated, key=len, reverse=True)
        )
    )

    def masked(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda found: generated[found.group(0)], value) if pattern.search(value) else value
        if isinstance(value, dict):
            for key, item in value.items():
                value[key] = masked(item)
        elif isinstance(value, list):
            value[:] = [masked(item) for item in value]
        return value

    for obj in objects:
        masked(obj)


def _sort_key(obj: dict[str, Any]) -> tuple[str, str, str, str, str]:
    import json

    metadata = obj.get("metadata") or {}
    return (
        str(obj.get("apiVersion")),
        str(obj.get("kind")),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name")),
        json.dumps(obj, sort_keys=True),
    )


def mask_object(
    obj: dict[str, Any], mask: Iterable[str] = (), *, settings: kopf.OperatorSettings | None = None
) -> dict[str, Any]:
    """A copy of an object without what differs between two equal runs (see :func:`end_state`).

    The operator's ``settings``, where known, say where its storages keep their state (see
    :func:`without_bookkeeping`).
    """
    # JSON data: a plain recursive copy (deepcopy's memo costs several times more).
    masked: dict[str, Any] = clone(without_bookkeeping(obj, settings))
    metadata = masked.setdefault("metadata", {})
    for field in VOLATILE_METADATA:
        metadata.pop(field, None)
    if metadata.get("generateName"):
        metadata["name"] = f"{metadata['generateName']}*"  # a random suffix, drawn in the order of creation
    elif isinstance(metadata.get("name"), str) and _UUID.search(metadata["name"]):
        metadata["name"] = _UUID.sub("*", metadata["name"])  # e.g. a volume named after its claim's uid
    for ref in _references(masked):
        ref.pop("uid", None)  # a uid, and the revision it was read at: how the cluster got there, not what it is
        ref.pop("resourceVersion", None)
        ref.pop("nodeName", None)  # (an endpoint's) where the scheduler has put its pod
    if masked.get("kind") == "Pod" and _scheduled_for_a_controller(metadata):
        _mask_placement(masked)
    _sort_endpoints(masked)
    if "deletionTimestamp" in metadata:
        metadata["deletionTimestamp"] = "<set>"
    for ref in metadata.get("ownerReferences") or ():
        ref.pop("uid", None)
    status = masked.get("status")
    if isinstance(status, dict):
        # The generation that a controller has seen counts the spec's changes (as metadata.generation, masked
        # above), not what the spec is: the same spec reached by another path has another count.
        status.pop("observedGeneration", None)
        for condition in status.get("conditions") or ():
            if isinstance(condition, dict):
                condition.pop("observedGeneration", None)
        if not status:
            masked.pop("status")
    for path in mask:
        _mask_path(masked, path.split("."))
    return masked


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _references(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The references to other objects that the cluster's controllers write: a volume's claim, the endpoints (and
    their pods)."""
    kind = obj.get("kind")
    if kind == "PersistentVolume":
        yield from _dicts([(obj.get("spec") or {}).get("claimRef")])
    elif kind == "Endpoints":
        for subset in _dicts(obj.get("subsets") or ()):
            for address in _dicts([*(subset.get("addresses") or ()), *(subset.get("notReadyAddresses") or ())]):
                yield address
                yield from _dicts([address.get("targetRef")])
    elif kind == "EndpointSlice":
        for endpoint in _dicts(obj.get("endpoints") or ()):
            yield endpoint
            yield from _dicts([endpoint.get("targetRef")])


#: The controllers whose pods go wherever the scheduler puts them (a DaemonSet's are pinned to their nodes).
_SCHEDULED_FOR = frozenset({"ReplicaSet", "StatefulSet", "Job"})


def _scheduled_for_a_controller(metadata: dict[str, Any]) -> bool:
    refs = metadata.get("ownerReferences") or ()
    return any(isinstance(ref, dict) and ref.get("controller") and ref.get("kind") in _SCHEDULED_FOR for ref in refs)


def _mask_placement(pod: dict[str, Any]) -> None:
    """Which node the scheduler has chosen for a controller's pod (by the order in which the pods came, which
    faults change): the cluster's choice, not the operator's. Whether it is scheduled is kept."""
    spec, status = pod.get("spec"), pod.get("status")
    if isinstance(spec, dict) and spec.get("nodeName"):
        spec["nodeName"] = "<scheduled>"
    if isinstance(status, dict):
        status.pop("hostIP", None)
        status.pop("hostIPs", None)


def _sort_endpoints(obj: dict[str, Any]) -> None:
    """The endpoints of a Service in the order of their pods' names (the cluster orders them by IP: noise)."""

    def by_pod(endpoint: Any) -> str:
        ref = endpoint.get("targetRef") if isinstance(endpoint, dict) else None
        return f"{ref.get('namespace')}/{ref.get('name')}" if isinstance(ref, dict) else ""

    kind = obj.get("kind")
    if kind == "Endpoints":
        for subset in _dicts(obj.get("subsets") or ()):
            for key in ("addresses", "notReadyAddresses"):
                if isinstance(subset.get(key), list):
                    subset[key] = sorted(subset[key], key=by_pod)
    elif kind == "EndpointSlice" and isinstance(obj.get("endpoints"), list):
        obj["endpoints"] = sorted(obj["endpoints"], key=by_pod)


def _dicts(values: Iterable[Any]) -> Iterator[dict[str, Any]]:
    return (value for value in values if isinstance(value, dict))


def _mask_path(value: Any, parts: list[str]) -> None:
    if not parts or not isinstance(value, dict):
        return
    head, rest = parts[0], parts[1:]
    for key in [key for key in value if fnmatch.fnmatchcase(str(key), head)]:
        if rest:
            _mask_path(value[key], rest)
        else:
            value[key] = "<masked>"
