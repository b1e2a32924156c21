"""One-line checks of an operator's robustness, found by hypothesis-driven action sequences.

:func:`check_operator` runs, for each check, a :class:`~pytest_kopf.stateful.OperatorMachine`
over generated sequences of actions (create, patch, delete, advance the time, plus the check's
perturbations), and raises :class:`~pytest_kopf.errors.OperatorCheckFailed` with the shrunk steps
and a runnable reproduction when the operator misbehaves. :func:`verify` is the checks' oracle
for one run at the end of its actions: the machines call it, and so do the reproductions.

The checks (see ``docs/checks.md`` for the precise meaning):

* ``convergence``: the operator gets quiet, every live object is handled (its latest state, no
  progress pending, no handler failed with an unexpected exception), deleted objects are gone;
* ``idempotence``: the end state equals that of a run with no faults and no crashes, and
  re-delivering every object to a fresh operator after that changes nothing;
* ``retries``: transient API errors (5xx, 429 with Retry-After, 409) change nothing in the end
  state, and no request is hammered (repeated many times within a virtual second);
* ``crash-restart``: crashes (after the k-th write, or at any moment) change nothing in the end state;
* ``stale-reads`` / ``withheld-events``: reads of older revisions / events late or coalesced
  change nothing in the end state;
* ``daemons``: after all objects are deleted, none of their daemons & timers is alive, none was
  abandoned past its cancellation timeout, and the operator stops with no task or thread left;
* ``finalizers``: after all objects are deleted, none is held by the operator's finalizer.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import datetime
import difflib
import gc
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from kopf_sim.controllers import ControllerSettings
from kopf_sim.timing.virtualtime import LivelockError

from .cluster import KopfCluster, Manifests
from .driving import DEFAULT_QUIET, DEFAULT_SETTLE_TIMEOUT, end_state, settle, tolerate
from .errors import KopfLeakError, OperatorCheckFailed
from .operator import KopfOperator
from .plugin import GC_YOUNG_THRESHOLD
from .strategies.schemas import CustomResource
from .strategies.steps import PERTURBATIONS, ReplayLog

if TYPE_CHECKING:
    import hypothesis
    from hypothesis import strategies as st

    import kopf

    from .stateful import OperatorMachine

__all__ = [
    "CHECKS",
    "CheckReport",
    "OperatorCheckFailed",
    "check_operator",
    "verify",
]

#: All the checks, in the order :func:`verify` runs them.
CHECKS: tuple[str, ...] = tuple(PERTURBATIONS)
#: The checks that compare the end state with that of a run with no faults and no crashes.
COMPARING = frozenset({"idempotence", "retries", "crash-restart", "stale-reads", "withheld-events"})
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


def validate_checks(checks: Iterable[str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(checks))
    unknown = [check for check in chosen if check not in CHECKS]
    if unknown:
        raise ValueError(f"Unknown check(s): {', '.join(map(repr, unknown))}; the checks are: {', '.join(CHECKS)}.")
    if not chosen:
        raise ValueError(f"No checks to run; the checks are: {', '.join(CHECKS)}.")
    return chosen


async def verify(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    *,
    checks: Sequence[str],
    resources: Sequence[str],
    expected: Sequence[Mapping[str, Any]] | None = None,
    namespace: str = "default",
    mask: Sequence[str] = (),
    quiet: float = DEFAULT_QUIET,
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
    records: Sequence[Any] | None = None,
    requests: Sequence[str] | None = None,
    trace: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The checks' verdict on a run whose actions are over: raise :class:`OperatorCheckFailed`, or return its end state.

    The operator is let to settle (the faults still armed fire meanwhile: the generated ones are all
    limited in count, so they are transient); then each check looks at the cluster (and, for ``daemons``
    & ``finalizers``, deletes every object of ``resources`` and settles again). ``expected``: the end state
    of the same actions with no faults and no crashes (for the comparing checks). ``records``: the
    operator's log records (by default, all that ``kopf_operator`` has captured); ``requests``: the
    trace's request lines; ``trace``: the run's trace lines (then ``retries`` also checks that handlers
    retried after a :class:`kopf.TemporaryError` are not called before their delay is over).
    """
    checks = validate_checks(checks)
    customs = [await _custom(kopf_cluster, name) for name in resources]

    async def handled() -> bool:
        return not _unhandled(kopf_cluster, kopf_operator, customs, namespace)

    settled = await _settle(kopf_cluster, kopf_operator, quiet=quiet, timeout=settle_timeout, until=handled)
    logs = list(records) if records is not None else list(kopf_operator.records)
    if "convergence" in checks:
        problems = _unhandled(kopf_cluster, kopf_operator, customs, namespace)
        if not settled and not problems:
            problems = [f"the cluster keeps changing: no {quiet} s without changes in {settle_timeout} s"]
        faulted = bool(kopf_cluster.sim.faults.injections) or bool(kopf_operator.crashes)
        problems.extend(_unexpected(logs, faulted=faulted))
        if problems:
            raise OperatorCheckFailed("convergence", _listed(problems))
    state = end_state(kopf_cluster, mask=mask)
    if expected is not None:
        for check in checks:
            if check in COMPARING and state != [dict(obj) for obj in expected]:
                unsettled = "" if settled else f" (and it has not settled in {settle_timeout} s)"
                raise OperatorCheckFailed(
                    check,
                    f"the end state differs from that of a run with no faults and "
                    f"no crashes{unsettled}:\n{_diff([dict(o) for o in expected], state)}",
                )
    if "retries" in checks and requests is not None:
        hammered = _hammered(requests)
        if hammered:
            raise OperatorCheckFailed("retries", _listed(hammered))
    if "retries" in checks and trace is not None:
        early = _early_retries(trace, getattr(asyncio.get_running_loop(), "epoch", None))
        if early:
            raise OperatorCheckFailed("retries", _listed(early))
    if "idempotence" in checks:
        await kopf_operator.restart()
        await _settle(kopf_cluster, kopf_operator, quiet=quiet, timeout=settle_timeout, until=handled)
        again = end_state(kopf_cluster, mask=mask)
        if again != state:
            raise OperatorCheckFailed(
                "idempotence",
                f"re-delivering every object to a fresh operator has changed the end state:\n{_diff(state, again)}",
            )
    if "finalizers" in checks or "daemons" in checks:
        await _delete_all(kopf_cluster, kopf_operator, customs, namespace, quiet=quiet, timeout=settle_timeout)
        if "finalizers" in checks:
            blocked = _blocked(kopf_cluster, kopf_operator, customs, namespace)
            if blocked:
                raise OperatorCheckFailed(
                    "finalizers",
                    f"{settle_timeout} s after all objects were deleted, "
                    f"these are still held by the operator's finalizer:\n"
                    f"{_listed(blocked)}",
                )
        if "daemons" in checks:
            problems = _alive_daemons(kopf_operator)
            problems.extend(f"{record.getMessage()}" for record in logs if ABANDONED in record.getMessage())
            if problems:
                raise OperatorCheckFailed(
                    "daemons", f"after all objects were deleted and the operator got quiet:\n{_listed(problems)}"
                )
            try:
                await kopf_operator.stop()
            except KopfLeakError as exc:
                raise OperatorCheckFailed("daemons", f"the operator has not stopped cleanly: {exc}") from None
    return state


async def _custom(kopf_cluster: KopfCluster, name: str) -> CustomResource:
    info = await kopf_cluster.resolve(name)
    return CustomResource(
        group=info.group,
        version=info.version,
        plural=info.plural,
        kind=info.kind,
        namespaced=info.namespaced,
        schema={},
        names=frozenset({info.plural}),
    )


def _objects_of(kopf_cluster: KopfCluster, custom: CustomResource, namespace: str) -> list[dict[str, Any]]:
    return list(kopf_cluster.sim.store.objects((custom.group, custom.plural), namespace if custom.namespaced else None))


def _kopf_resource(custom: CustomResource) -> Any:
    from kopf._cogs.structs.references import Resource

    return Resource(
        group=custom.group, version=custom.version, plural=custom.plural, kind=custom.kind, namespaced=custom.namespaced
    )


def _unhandled(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator, customs: Sequence[CustomResource], namespace: str
) -> list[str]:
    """What is not handled yet: objects being deleted, objects not handled in their latest state, pending progress."""
    from kopf._cogs.structs import bodies, diffs

    problems: list[str] = []
    registry, settings = kopf_operator.registry, kopf_operator.settings
    if not kopf_operator.running or registry is None or settings is None:
        return [f"the operator is not running (exit code {kopf_operator.exit_code})"]
    finalizer = settings.persistence.finalizer
    for custom in customs:
        resource = _kopf_resource(custom)
        handlers = registry.changing.get_resource_handlers(resource)
        unfiltered = any(
            handler.labels is None
            and handler.annotations is None
            and handler.when is None
            and handler.field is None
            and handler.reason is not None
            for handler in handlers
        )
        extra_fields = registry.changing.get_extra_fields(resource)
        for obj in _objects_of(kopf_cluster, custom, namespace):
            metadata = obj.get("metadata") or {}
            name = f"{custom.plural} {metadata.get('name')}"
            if metadata.get("deletionTimestamp"):
                holders = ", ".join(metadata.get("finalizers") or ()) or "nothing"
                mine = " (the operator's own)" if finalizer in (metadata.get("finalizers") or ()) else ""
                problems.append(f"{name}: deleted, but still there, held by {holders}{mine}")
                continue
            pending = sorted(
                key
                for key in metadata.get("annotations") or {}
                if key.startswith("kopf.zalando.org/") and not key.endswith("last-handled-configuration")
            )
            if pending:
                body = bodies.Body(obj)
                details = "; ".join(f"{key.split('/', 1)[1]}: {_progress(body, key)}" for key in pending)
                problems.append(f"{name}: handling is still in progress ({details})")
                continue
            if not handlers:
                continue
            body = bodies.Body(obj)
            diffbase = settings.persistence.diffbase_storage
            progress = settings.persistence.progress_storage
            stored = diffbase.fetch(body=body)
            if stored is None:
                if unfiltered:
                    problems.append(f"{name}: never handled")
                continue
            old = progress.clear(essence=stored)
            new = progress.clear(essence=diffbase.build(body=body, extra_fields=extra_fields))
            if diffs.diff(old, new):
                problems.append(
                    f"{name}: its latest state is not handled (differs from the last handled one in "
                    f"{', '.join('.'.join(item[1]) or '(root)' for item in diffs.diff(old, new))})"
                )
    return problems


def _progress(body: Any, key: str) -> str:
    raw = (body.metadata.annotations or {}).get(key, "")
    try:
        record = json.loads(raw)
    except ValueError:
        return str(raw)[:100]
    if not isinstance(record, dict):
        return str(raw)[:100]
    parts = [
        f"{field}={record[field]!r}"
        for field in ("retries", "message", "failure", "delayed")
        if record.get(field) not in (None, False, "")
    ]
    return ", ".join(parts) or "started"


def _unexpected(records: Iterable[Any], *, faulted: bool = False) -> list[str]:
    """The unexpected exceptions logged; with faults injected, not those of the API (the faults' own doing)."""
    import aiohttp

    from kopf._cogs.clients.errors import APIError

    found: list[str] = []
    for record in records:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if faulted and isinstance(error, APIError | aiohttp.ClientError | TimeoutError):
            continue
        if message.startswith("Failed to post an event"):
            continue  # a k8s Event about a handler, not a handler's failure (its text may quote one)
        if any(marker in message for marker in UNEXPECTED):
            ref = getattr(record, "k8s_ref", None)
            where = f"{ref.get('name')}: " if isinstance(ref, dict) else ""
            error = f" ({record.exc_info[1]!r})" if record.exc_info and record.exc_info[1] is not None else ""
            found.append(f"{where}{message}{error}")
    return list(dict.fromkeys(found))


def _hammered(requests: Iterable[str]) -> list[str]:
    """Failed requests sent again at least :data:`HAMMERING` times within one virtual second (watches aside).

    A create answered "already exists" (409) is not a failure: operators create-or-patch their children.

    ``requests``: lines of :func:`~pytest_kopf.driving.record_requests` (``<time> request <method> <path> <status>``).
    """
    counts: collections.Counter[tuple[int, str]] = collections.Counter()
    for line in requests:
        moment, kind, method, path, status = [*line.split(" "), "", "", ""][:5]
        if kind != "request" or "watch=" in path or not status.isdigit() or 0 < int(status) < 400:
            continue
        if method == "POST" and status == "409":  # "already exists": an answer (create-or-patch), not a failure
            continue
        counts[int(float(moment)), f"{method} {path}"] += 1
    return [
        f"{method_path}: failed {count} times within the second {second}, retried with no back-off"
        for (second, method_path), count in sorted(counts.items())
        if count >= HAMMERING
    ]


def _early_retries(lines: Iterable[str], epoch: datetime.datetime | None) -> list[str]:
    """Handlers called again before the delay that their progress record had set (read from the trace)."""
    if epoch is None:
        return []
    due: dict[tuple[str, str], float] = {}  # (namespace/name, handler id) -> the loop time of the delay's end
    # The delays being written, by the patch's path: they count once the cluster has accepted the patch (a delay
    # whose write has failed is not stored anywhere; kopf then processes the object again after throttling).
    writing: dict[str, dict[tuple[str, str], float]] = {}
    stale = False  # whether the cluster has shown an older state (a stale read, events withheld) in this run
    found: list[str] = []
    for line in lines:
        moment, kind, rest = ([*line.split(" ", 2), "", ""])[:3]
        if kind == "fault" and rest.startswith(("stale read", "withhold events")):
            stale = True
        if kind == "change" and rest.startswith("DELETED "):  # a new object of that name starts from scratch
            gone = ([*rest.split(" "), "", ""])[2]
            for stale_key in [pending for pending in due if pending[0] == gone]:
                del due[stale_key]
        if stale and _restarting(kind, rest):
            # A fresh operator that reads an older state (a stale list, or events held back) cannot know of the
            # delays stored after it: it runs the handlers at once. That is the stale view's doing, not a retry's.
            due.clear()
            writing.clear()
        if kind == "request" and rest.startswith("PATCH ") and '"kopf.zalando.org/' in rest:
            _, path_qs, body = ([*rest.split(" ", 2), ""])[:3]
            path = path_qs.split("?", 1)[0]
            parts = path.split("/")
            if parts[-1] == "status":
                parts = parts[:-1]
            where = f"{parts[parts.index('namespaces') + 1]}/{parts[-1]}" if "namespaces" in parts else parts[-1]
            delays = writing.setdefault(path, {})
            for key, value in _annotations(body).items():
                record = _json(value) if key.startswith("kopf.zalando.org/") else None
                if (
                    isinstance(record, dict)
                    and record.get("delayed")
                    and not record.get("success")
                    and not record.get("failure")
                ):
                    delayed = datetime.datetime.fromisoformat(str(record["delayed"]))
                    delays[where, key.split("/", 1)[1]] = (delayed - epoch).total_seconds()
        elif kind == "response" and rest.startswith(tuple("0123456789")):
            status, method, path = ([*rest.split(" ", 2), "", ""])[:3]
            delays = writing.pop(path, {}) if method == "PATCH" else {}
            if status.startswith("2"):
                due.update(delays)
        elif kind == "log" and "] Handler '" in rest:
            where = rest.split("[", 1)[1].split("]", 1)[0]
            handler = rest.split("Handler '", 1)[1].split("'", 1)[0]
            deadline = due.pop((where, handler), None)
            if deadline is not None and float(moment) < deadline - 0.001:
                found.append(
                    f"{where}: handler {handler!r} was called again at {float(moment):.3f} s, "
                    f"before its retry delay was over (at {deadline:.3f} s)"
                )
    return found


def _restarting(kind: str, rest: str) -> bool:
    """Whether a trace line tells of the operator being replaced by a fresh one (crashed, or restarted)."""
    if kind == "fault":
        return rest.startswith("crash after write")
    return kind == "action" and ("kopf_operator.restart()" in rest or "kopf_operator.crash()" in rest)


def _annotations(body: str) -> dict[str, Any]:
    data = _json(body)
    metadata = data.get("metadata") if isinstance(data, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


async def _delete_all(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    customs: Sequence[CustomResource],
    namespace: str,
    *,
    quiet: float,
    timeout: float,
) -> None:
    for custom in customs:
        for obj in _objects_of(kopf_cluster, custom, namespace):
            await tolerate(
                kopf_cluster.delete(custom.qualified, obj["metadata"]["name"], obj["metadata"].get("namespace"))
            )

    async def gone() -> bool:
        return not any(_objects_of(kopf_cluster, custom, namespace) for custom in customs) and not _alive_daemons(
            kopf_operator
        )

    await _settle(kopf_cluster, kopf_operator, quiet=quiet, timeout=timeout, until=gone)


async def _settle(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    *,
    quiet: float,
    timeout: float,
    until: Callable[[], Awaitable[bool]],
) -> bool:
    """Settle; an endless update loop (which would never let the virtual time come to the deadline) fails it."""
    try:
        return await settle(kopf_cluster, kopf_operator, quiet=quiet, timeout=timeout, until=until)
    except LivelockError as exc:
        raise livelocked(exc) from None


def livelocked(error: LivelockError) -> OperatorCheckFailed:
    """An endless update loop as the checks report it: the operator does not settle (whichever check runs)."""
    return OperatorCheckFailed("convergence", f"the operator does not settle: {error}")


def _blocked(
    kopf_cluster: KopfCluster, kopf_operator: KopfOperator, customs: Sequence[CustomResource], namespace: str
) -> list[str]:
    settings = kopf_operator.settings
    finalizer = settings.persistence.finalizer if settings is not None else "kopf.zalando.org/KopfFinalizerMarker"
    return [
        f"{custom.plural} {obj['metadata']['name']} (finalizers: {', '.join(obj['metadata']['finalizers'])})"
        for custom in customs
        for obj in _objects_of(kopf_cluster, custom, namespace)
        if finalizer in (obj["metadata"].get("finalizers") or ())
    ]


def _alive_daemons(kopf_operator: KopfOperator) -> list[str]:
    return [
        f"{task.get_name()} is still running"
        for task in kopf_operator._tasks.pending()
        if task.get_name().startswith(("daemon '", "timer '"))
    ]


def _listed(items: Sequence[str]) -> str:
    return "\n".join(f"  - {item}" for item in items)


def _diff(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> str:
    left = yaml.safe_dump(expected, sort_keys=True).splitlines()
    right = yaml.safe_dump(actual, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(left, right, "expected (no faults, no crashes)", "actual", lineterm=""))


# -- check_operator ----------------------------------------------------------------------------------


@dataclasses.dataclass
class CheckReport:
    """What :func:`check_operator` has run: per check, and in total."""

    checks: list[str]
    examples: int = 0
    steps: int = 0
    faults: int = 0
    crashes: int = 0
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0
    per_check: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        return (
            f"{', '.join(self.checks)}: {self.examples} examples, {self.steps} steps, {self.faults} faults "
            f"injected, {self.crashes} crashes, {self.virtual_seconds:.0f} virtual s in "
            f"{self.wall_seconds:.1f} wall s"
        )


def check_operator(
    *,
    paths: Sequence[str | os.PathLike[str]] = (),
    modules: Sequence[str] = (),
    registry: Callable[[], kopf.OperatorRegistry] | None = None,
    manifests: Sequence[Manifests] = (),
    resources: Sequence[str] = (),
    checks: Sequence[str] = CHECKS,
    max_examples: int = 100,
    max_steps: int = 20,
    specs: Mapping[str, st.SearchStrategy[Any]] | None = None,
    names: Sequence[str] = ("obj-0", "obj-1"),
    namespace: str = "default",
    mask: Sequence[str] = (),
    quiet: float = DEFAULT_QUIET,
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
    settings: hypothesis.settings | None = None,
    shrink: bool = True,
    combined: bool = False,
    logs: Sequence[str | os.PathLike[str]] = (),
    initial_steps: Sequence[Any] = (),
    controllers: ControllerSettings | str | Sequence[str] | bool | None = None,
) -> CheckReport:
    """Run the checks on the operator over generated action sequences; raise the first failure, shrunk.

    The operator: ``paths`` (files), ``modules``, or ``registry`` (a function making a fresh
    :class:`kopf.OperatorRegistry`; reproductions cannot replay those). ``manifests``: applied to every
    fresh cluster (the CRDs of ``resources`` among them). ``resources``: the resources whose objects
    the actions create, patch and delete (as kubectl names them). ``specs``: strategies for the specs
    by resource name (default: from the CRD schema). ``max_examples`` per check; ``max_steps`` per
    example. ``settings``: hypothesis settings to start from (the current profile by default).
    ``shrink``: shrink a failing sequence (removing and simplifying its steps while it fails the same check).
    ``combined``: all the checks in one machine (every fault kind in the same examples), not one machine each.
    ``logs``: recorded watch-event logs replayed as one of the users' actions; ``initial_steps``: actions done
    at the start of every example (e.g. ``[ReplayLog("incident.jsonl")]``: a recorded incident as the start).
    ``controllers``: the built-in controllers of the simulated clusters (``"none"``, ``"all,-cronjobs"``, or
    :class:`~kopf_sim.controllers.ControllerSettings`); by default, those that the test being run selects for
    its ``kopf_cluster`` (the ``kopf_controllers`` ini option and marker).

    Returns a :class:`CheckReport`; raises :class:`~pytest_kopf.errors.OperatorCheckFailed`.
    """
    chosen = validate_checks(checks)
    if not resources:
        raise ValueError("No resources to drive: pass resources=['plural.group', ...] (their CRDs in manifests=).")
    if not (paths or modules or registry):
        raise ValueError("No operator to check: pass paths=[...], modules=[...], or registry=.")
    _read_logs([*logs, *(step.log for step in initial_steps if isinstance(step, ReplayLog))])
    report = CheckReport(checks=list(chosen))
    started = time.perf_counter()
    # As in a session of kopf tests: the youngest generation collected less often (most of a world's objects are
    # gone by then); no freezing here (that is the plugin's decision for the session).
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], GC_YOUNG_THRESHOLD), *thresholds[1:])
    kopf_level = logging.getLogger("kopf").level
    try:
        _run_checks(
            chosen,
            report,
            started,
            machine_options=dict(
                paths=paths,
                modules=modules,
                registry=registry,
                manifests=manifests,
                resources=resources,
                specs=specs,
                names=names,
                namespace=namespace,
                mask=mask,
                quiet=quiet,
                settle_timeout=settle_timeout,
                logs=logs,
                initial_steps=initial_steps,
                controllers=controllers,
            ),
            settings=settings,
            max_examples=max_examples,
            max_steps=max_steps,
            shrink=shrink,
            combined=combined,
        )
    finally:
        gc.set_threshold(*thresholds)
        logging.getLogger("kopf").setLevel(kopf_level)
    return report


def _read_logs(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Read and check the logs to replay before any example: a bad one is a :class:`LogError` naming its lines
    at once, not a failing example found (and shrunk) when its replay happens to be drawn."""
    from kopf_sim.recording.replaying import read_log

    for path in paths:
        read_log(path)


def _run_checks(
    chosen: Sequence[str],
    report: CheckReport,
    started: float,
    *,
    machine_options: dict[str, Any],
    settings: hypothesis.settings | None,
    max_examples: int,
    max_steps: int,
    shrink: bool,
    combined: bool,
) -> None:
    from hypothesis import HealthCheck, Phase
    from hypothesis import settings as hypothesis_settings
    from hypothesis.stateful import run_state_machine_as_test

    from .seeding import without_local_constants
    from .stateful import OperatorMachine, Statistics

    base = settings if settings is not None else hypothesis_settings()
    groups = [tuple(chosen)] if combined else [(check,) for check in chosen]
    for group in groups:
        check = "+".join(group)
        machine = OperatorMachine.configured(
            f"Check_{check.replace('-', '_').replace('+', '_')}", checks=group, **machine_options
        )
        stats = Statistics()
        machine.statistics = stats
        # Hypothesis finds a failing sequence; then shrunk() removes and simplifies its steps one by one, which
        # is a few dozen runs, where hypothesis' own shrinking of such sequences takes hundreds of them.
        phases = [phase for phase in base.phases if phase != Phase.shrink] if shrink else base.phases
        run_settings = hypothesis_settings(
            base,
            max_examples=max_examples,
            stateful_step_count=max_steps,
            deadline=None,
            report_multiple_bugs=False,
            phases=phases,
            suppress_health_check=[
                *base.suppress_health_check,
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
            ],
        )
        try:
            try:
                with without_local_constants():
                    run_state_machine_as_test(machine, settings=run_settings)
            except OperatorCheckFailed as failure:
                if not shrink:
                    raise
                raise shrunk(machine, failure) from None
            vacuous = stats.reach.vacuous(stats.examples)
            if vacuous is not None:
                raise OperatorCheckFailed(check, vacuous)
        finally:
            report.examples += stats.examples
            report.steps += stats.steps
            report.faults += stats.faults
            report.crashes += stats.crashes
            report.virtual_seconds += stats.virtual_seconds
            report.per_check[check] = dataclasses.asdict(stats)
            report.wall_seconds = time.perf_counter() - started


#: At most this many runs to shrink a failing sequence (each a fresh world or two, with the checks).
SHRINK_BUDGET = 150


def shrunk(
    machine: type[OperatorMachine], failure: OperatorCheckFailed, budget: int = SHRINK_BUDGET
) -> OperatorCheckFailed:
    """The failure of the simplest sequence found that still fails the same check.

    Steps are removed (from the last one: later steps depend on earlier ones), then simplified
    (:meth:`~pytest_kopf.strategies.Action.simpler`), over and over while that keeps failing.
    The result is deterministic: the same sequence shrinks to the same steps.
    """
    best = failure
    steps = list(failure.steps)
    runs = 0

    def fails(candidate: list[Any]) -> OperatorCheckFailed | None:
        nonlocal runs
        runs += 1
        try:
            machine.replay(candidate)
        except OperatorCheckFailed as exc:
            return exc if exc.check == failure.check else None
        except Exception:
            return None
        return None

    improved = True
    while improved and runs < budget:
        improved = False
        index = len(steps) - 1
        while index >= 0 and runs < budget:
            candidate = steps[:index] + steps[index + 1 :]
            found = fails(candidate)
            if found is not None:
                steps, best, improved = candidate, found, True
            index -= 1
        for index in range(len(steps)):
            for simpler in steps[index].simpler():
                if runs >= budget:
                    break
                candidate = [*steps[:index], simpler, *steps[index + 1 :]]
                found = fails(candidate)
                if found is not None:
                    steps, best, improved = candidate, found, True
                    break
    return best
