"""Jobs: pods run to completion; succeeded/failed counts, the back-off limit, conditions, the TTL after finishing.

The controller keeps ``parallelism`` pods running until ``completions`` of them succeeded (Complete),
or more than ``backoffLimit`` failed (Failed: BackoffLimitExceeded; with ``restartPolicy: OnFailure``,
container restarts count as failures), or the ``activeDeadlineSeconds`` passed (Failed:
DeadlineExceeded). A failed pod is replaced after the pod-failure back-off (10 s, doubling, up to
6 min). Pods carry the ``batch.kubernetes.io/job-tracking`` finalizer until they are counted.
``Indexed`` jobs give each pod its completion index. A finished Job with ``ttlSecondsAfterFinished``
is deleted that long after it finished (the TTL-after-finished controller's job). ``suspend`` stops
the pods and holds the Job. Pod failure policies and success policies are not simulated.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable
from typing import Any

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.store.watching import Change

from .podtemplates import is_active, pod_from_template, ready_since
from .replicasets import owned_pods
from .runtime import JOBS, PODS, Controller, Key, condition, owner_key, parse_time, set_condition

TRACKING = "batch.kubernetes.io/job-tracking"
INDEX = "batch.kubernetes.io/job-completion-index"
FINISHED = ("Complete", "Failed")
BACKOFF_BASE, BACKOFF_MAX = 10.0, 360.0


def finished_condition(job: JsonDict) -> JsonDict | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in FINISHED and cond.get("status") == "True":
            return dict(cond)
    return None


def _finished_at(pod: JsonDict) -> datetime.datetime | None:
    times = [
        parse_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for c in (pod.get("status") or {}).get("containerStatuses") or []
    ]
    found = [t for t in times if t is not None]
    return max(found) if found else None


def _index_of(pod: JsonDict) -> int | None:
    try:
        return int((meta(pod).get("annotations") or {}).get(INDEX, ""))
    except ValueError:
        return None


def _ranges(indexes: Iterable[int]) -> str:
    """Completed indexes as the apiserver writes them: ``0-2,5``."""
    result: list[str] = []
    for index in sorted(set(indexes)):
        if result and "-" in result[-1] and int(result[-1].split("-")[1]) == index - 1:
            result[-1] = f"{result[-1].split('-')[0]}-{index}"
        elif result and "-" not in result[-1] and int(result[-1]) == index - 1:
            result[-1] = f"{result[-1]}-{index}"
        else:
            result.append(str(index))
    return ",".join(result)


def _parse_ranges(text: str | None) -> set[int]:
    found: set[int] = set()
    for part in (text or "").split(","):
        if "-" in part:
            first, last = part.split("-", 1)
            found.update(range(int(first), int(last) + 1))
        elif part.strip():
            found.add(int(part))
    return found


@dataclasses.dataclass
class _Counts:
    """The Job's finished pods, counted: succeeded, failed, and the completed indexes (Indexed mode)."""

    succeeded: int
    failed: int
    completed: set[int]


def _count_finished(pods: Iterable[JsonDict], status: JsonDict, *, indexed: bool) -> _Counts:
    """The counts in the status, plus the finished pods that still have the tracking finalizer (not counted yet)."""
    counts = _Counts(
        succeeded=int(status.get("succeeded") or 0),
        failed=int(status.get("failed") or 0),
        completed=_parse_ranges(status.get("completedIndexes")),
    )
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase not in ("Succeeded", "Failed") or TRACKING not in (meta(pod).get("finalizers") or ()):
            continue
        if phase == "Failed":
            counts.failed += 1
            continue
        index = _index_of(pod)
        if not indexed or (index is not None and index not in counts.completed):
            counts.succeeded += 1
        if indexed and index is not None:
            counts.completed.add(index)
    return counts


def _wanted(completions: Any, parallelism: int, succeeded: int) -> int:
    """How many pods should be active: up to the parallelism, no more than the completions still missing."""
    if completions is not None:
        return max(min(parallelism, int(completions) - succeeded), 0)
    return 0 if succeeded else max(parallelism, 0)


def _update_status(
    status: JsonDict,
    counts: _Counts,
    pods: list[JsonDict],
    active: list[JsonDict],
    conditions: list[JsonDict],
    *,
    indexed: bool,
) -> None:
    """The Job's status as the controller writes it: the counts (zeros omitted), the pods' states, the conditions."""
    status.update(succeeded=counts.succeeded, failed=counts.failed, active=len(active))
    status["ready"] = sum(1 for p in active if ready_since(p) is not None)
    status["terminating"] = sum(1 for p in pods if meta(p).get("deletionTimestamp"))
    status["uncountedTerminatedPods"] = {}
    if indexed:
        status["completedIndexes"] = _ranges(counts.completed)
    for field in ("succeeded", "failed", "active"):
        if not status[field]:
            del status[field]
    if conditions:
        status["conditions"] = conditions


class JobController(Controller):
    name = "jobs"
    primary = JOBS
    watches = (PODS,)

    def related_keys(self, change: Change) -> Iterable[Key]:
        key = owner_key(change.obj, "Job")
        return (key,) if key is not None else ()

    async def reconcile(self, key: Key) -> None:
        job = self.get(JOBS, key)
        if job is None:
            return
        pods = owned_pods(self, job)
        if meta(job).get("deletionTimestamp"):
            await self._release(pods, everything=True)
            return
        finished = finished_condition(job)
        if finished is not None:
            await self._release(pods, everything=True)
            await self._expire(job, finished)
            return
        await self._sync(job, pods, key)

    async def _sync(self, job: JsonDict, pods: list[JsonDict], key: Key) -> None:
        spec = job.get("spec") or {}
        status = dict(job.get("status") or {})
        now = self.now()
        if not spec.get("suspend"):
            status.setdefault("startTime", now)
        indexed = spec.get("completionMode") == "Indexed"
        counts = _count_finished(pods, status, indexed=indexed)  # the pods not counted yet; then let them go
        await self._release(pods)
        active = [p for p in pods if is_active(p)]
        conditions = [dict(c) for c in status.get("conditions") or []]
        outcome = self._outcome(spec, status, counts, pods, active)
        if outcome is not None:
            active, conditions = await self._conclude(outcome, status, conditions, active, now)
        elif spec.get("suspend"):
            for pod in active:
                await self.delete(pod)
            active = []
            conditions = set_condition(
                conditions, "Suspended", "True", "JobSuspended", "Job suspended", now, probe=True
            )
        else:
            if condition(conditions, "Suspended") is not None:
                conditions = set_condition(
                    conditions, "Suspended", "False", "JobResumed", "Job resumed", now, probe=True
                )
            active = await self._run_pods(job, pods, active, counts, key)
        _update_status(status, counts, pods, active, conditions, indexed=indexed)
        await self.update_status(job, status)
        await self._follow_up(spec, status, key)

    def _outcome(
        self, spec: JsonDict, status: JsonDict, counts: _Counts, pods: list[JsonDict], active: list[JsonDict]
    ) -> tuple[str, str, str] | None:
        """Whether the Job has failed or completed now: (the condition's type, reason, message), or None."""
        completions = spec.get("completions")
        restarts = sum(
            int(c.get("restartCount") or 0)
            for p in pods
            for c in (p.get("status") or {}).get("containerStatuses") or []
        )
        backoff_limit = int(spec.get("backoffLimit", 6))
        if counts.failed > backoff_limit or restarts > backoff_limit:
            return ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        if self._past_deadline(spec, status):
            return ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
        if (completions is not None and counts.succeeded >= int(completions)) or (
            completions is None and counts.succeeded >= 1 and not active
        ):
            return ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")
        return None

    async def _conclude(
        self,
        outcome: tuple[str, str, str],
        status: JsonDict,
        conditions: list[JsonDict],
        active: list[JsonDict],
        now: str,
    ) -> tuple[list[JsonDict], list[JsonDict]]:
        """The Job has failed or completed: its active pods go, its conditions say so; (no pods, the conditions)."""
        type_, reason, message = outcome
        for pod in active:
            await self.delete(pod)
        first = "FailureTarget" if type_ == "Failed" else "SuccessCriteriaMet"
        conditions = set_condition(conditions, first, "True", reason, message, now, probe=True)
        conditions = set_condition(conditions, type_, "True", reason, message, now, probe=True)
        if type_ == "Complete":
            status["completionTime"] = now
        return [], conditions

    async def _follow_up(self, spec: JsonDict, status: JsonDict, key: Key) -> None:
        """After the status is written: expire a finished Job, or come back at the active deadline."""
        finished = finished_condition({"status": status})
        if finished is not None:
            refreshed = self.get(JOBS, key)
            if refreshed is not None:
                await self._expire(refreshed, finished)
        elif spec.get("activeDeadlineSeconds") is not None and status.get("startTime"):
            start = parse_time(status["startTime"])
            if start is not None:
                due = (start - self.wall()).total_seconds() + int(spec["activeDeadlineSeconds"])
                self.later(max(due, 0.0), key)

    async def _run_pods(
        self, job: JsonDict, pods: list[JsonDict], active: list[JsonDict], counts: _Counts, key: Key
    ) -> list[JsonDict]:
        """Scale the active pods to what is wanted now (backing off after failures); the active pods then."""
        spec = job.get("spec") or {}
        completions = spec.get("completions")
        wanted = _wanted(completions, int(spec.get("parallelism", 1)), counts.succeeded)
        if len(active) > wanted:
            for pod in sorted(active, key=lambda p: meta(p).get("creationTimestamp", ""), reverse=True)[wanted:]:
                await self.delete(pod)
            return active[:wanted]
        if len(active) < wanted and not self._backing_off(pods, counts.failed, key):
            active = await self._add_pods(job, active, wanted - len(active), counts.completed)
        return active

    async def _add_pods(self, job: JsonDict, active: list[JsonDict], count: int, completed: set[int]) -> list[JsonDict]:
        """Create up to ``count`` new pods (in Indexed mode: for the indexes neither completed nor active)."""
        spec = job.get("spec") or {}
        indexed = spec.get("completionMode") == "Indexed"
        busy = {_index_of(p) for p in active}
        free = [i for i in range(int(spec.get("completions") or 0)) if i not in completed and i not in busy]
        for number in range(count):
            index = free[number] if indexed and number < len(free) else None
            if indexed and index is None:
                break
            created = await self.create(PODS, meta(job).get("namespace"), self._pod(job, index))
            if created is None:
                break
            active = [*active, created]
        return active

    def _backing_off(self, pods: list[JsonDict], failed: int, key: Key) -> bool:
        """Whether new pods wait for the back-off after the last failure (the Job comes back when it is over)."""
        if not failed:
            return False
        failures = (_finished_at(p) for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        last = max((t for t in failures if t is not None), default=None)
        if last is None:
            return False
        delay = min(BACKOFF_BASE * 2 ** (failed - 1), BACKOFF_MAX)
        remaining = (last - self.wall()).total_seconds() + delay
        if remaining > 0:
            self.later(remaining, key)
            return True
        return False

    def _pod(self, job: JsonDict, index: int | None) -> JsonDict:
        metadata = meta(job)
        labels = {
            "batch.kubernetes.io/controller-uid": metadata["uid"],
            "batch.kubernetes.io/job-name": metadata["name"],
            "controller-uid": metadata["uid"],
            "job-name": metadata["name"],
        }
        annotations: dict[str, str] = {}
        generate = f"{metadata['name']}-"
        if index is not None:
            labels[INDEX] = str(index)
            annotations[INDEX] = str(index)
            generate = f"{metadata['name']}-{index}-"
        pod = pod_from_template(
            (job.get("spec") or {}).get("template"),
            job,
            generate_name=generate,
            labels=labels,
            annotations=annotations,
            finalizers=[TRACKING],
        )
        if index is not None:
            pod["spec"].setdefault("hostname", f"{metadata['name']}-{index}")
        return pod

    def _past_deadline(self, spec: JsonDict, status: JsonDict) -> bool:
        deadline = spec.get("activeDeadlineSeconds")
        start = parse_time(status.get("startTime"))
        return deadline is not None and start is not None and (self.wall() - start).total_seconds() >= int(deadline)

    async def _release(self, pods: list[JsonDict], *, everything: bool = False) -> None:
        """Remove the tracking finalizer from counted pods (all of them when the Job is done)."""
        for pod in pods:
            finalizers = meta(pod).get("finalizers") or []
            finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if TRACKING in finalizers and (everything or finished or meta(pod).get("deletionTimestamp")):
                remaining = [f for f in finalizers if f != TRACKING]
                metadata = {**pod["metadata"], "finalizers": remaining}
                if not remaining:
                    del metadata["finalizers"]
                await self.update({**pod, "metadata": metadata})

    async def _expire(self, job: JsonDict, finished: JsonDict) -> None:
        """The TTL-after-finished controller: delete the Job (and its pods) when its time is up."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None or meta(job).get("deletionTimestamp"):
            return
        since = parse_time(finished.get("lastTransitionTime"))
        if since is None:
            return
        remaining = (since - self.wall()).total_seconds() + int(ttl)
        if remaining > 0:
            self.later(remaining, (meta(job).get("namespace", ""), meta(job)["name"]))
            return
        await self.delete(job, propagation="Foreground")
