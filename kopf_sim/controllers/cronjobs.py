"""CronJobs: Jobs on schedule, in (virtual) time.

At every scheduled time (standard five-field cron syntax or ``@hourly``-style macros, in
``spec.timeZone`` or UTC) a Job ``<cronjob>-<minutes since the epoch>`` is made from the job
template, as the real controller names them. Only the most recent missed time is run, and not if it
is older than ``startingDeadlineSeconds``; ``concurrencyPolicy`` Forbid skips a run while a Job is
active, Replace deletes the active ones first. Finished Jobs beyond the history limits are deleted.
Between two runs there is one timer, for the next scheduled time.
"""

from __future__ import annotations

import datetime
import logging
import zoneinfo
from collections.abc import Iterable

import cronsim

from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.store.watching import Change
from kopf_sim.timing.clock import format_timestamp

from .jobs import finished_condition
from .runtime import CRONJOBS, JOBS, Controller, Key, new_owner_ref, owned_by, owner_key, parse_time

logger = logging.getLogger("kopf_sim.controllers")

SCHEDULED_AT = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class ScheduleError(ValueError):
    pass


def _zone(name: str | None) -> datetime.tzinfo:
    if not name:
        return datetime.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"unknown time zone {name!r}") from exc


def _expression(schedule: str) -> str:
    text = " ".join(schedule.split())
    return MACROS.get(text.lower(), text)


def latest_before(schedule: str, zone: str | None, moment: datetime.datetime) -> datetime.datetime | None:
    """The latest scheduled time at or before the moment."""
    tz = _zone(zone)
    start = (moment + datetime.timedelta(seconds=1)).astimezone(tz).replace(microsecond=0)
    try:
        return next(iter(cronsim.CronSim(_expression(schedule), start, reverse=True))).astimezone(datetime.UTC)
    except (cronsim.CronSimError, StopIteration) as exc:
        raise ScheduleError(f"invalid schedule {schedule!r}: {exc}") from exc


def next_after(schedule: str, zone: str | None, moment: datetime.datetime) -> datetime.datetime | None:
    """The first scheduled time after the moment."""
    tz = _zone(zone)
    try:
        return next(
            iter(cronsim.CronSim(_expression(schedule), moment.astimezone(tz).replace(microsecond=0)))
        ).astimezone(datetime.UTC)
    except (cronsim.CronSimError, StopIteration) as exc:
        raise ScheduleError(f"invalid schedule {schedule!r}: {exc}") from exc


def _last_success(jobs: Iterable[JsonDict]) -> datetime.datetime | None:
    """When the latest of the completed Jobs completed, if any did."""
    successful = [
        parse_time((j.get("status") or {}).get("completionTime"))
        for j in jobs
        if (finished_condition(j) or {}).get("type") == "Complete"
    ]
    return max((t for t in successful if t is not None), default=None)


def _reference(job: JsonDict) -> JsonDict:
    metadata = meta(job)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": metadata["name"],
        "namespace": metadata.get("namespace"),
        "resourceVersion": metadata.get("resourceVersion"),
        "uid": metadata["uid"],
    }


class CronJobController(Controller):
    name = "cronjobs"
    primary = CRONJOBS
    watches = (JOBS,)

    def related_keys(self, change: Change) -> Iterable[Key]:
        key = owner_key(change.obj, "CronJob")
        return (key,) if key is not None else ()

    async def reconcile(self, key: Key) -> None:
        cronjob = self.get(CRONJOBS, key)
        if cronjob is None or meta(cronjob).get("deletionTimestamp"):
            return
        spec = cronjob.get("spec") or {}
        now = self.wall()
        jobs = self._jobs_of(cronjob)
        active = [j for j in jobs if finished_condition(j) is None and not meta(j).get("deletionTimestamp")]
        status = dict(cronjob.get("status") or {})
        try:
            due = self._due(cronjob, status, now)
            following = next_after(spec.get("schedule", ""), spec.get("timeZone"), now)
        except ScheduleError as exc:
            logger.warning("cronjobs: %s/%s: %s", *key, exc)
            return
        if due is not None and not spec.get("suspend") and self._may_run(cronjob, active):
            active = await self._run(cronjob, due, jobs, active)
            status["lastScheduleTime"] = format_timestamp(due)
        jobs = await self._clean_up(cronjob, jobs)
        latest = _last_success(jobs)
        if latest is not None:
            status["lastSuccessfulTime"] = format_timestamp(latest)
        refs = self._references(active)
        if refs:
            status["active"] = refs
        else:
            status.pop("active", None)
        await self.update_status(cronjob, status)
        if following is not None:
            self.later(max((following - now).total_seconds(), 0.0), key)

    def _jobs_of(self, cronjob: JsonDict) -> list[JsonDict]:
        """The CronJob's Jobs, the oldest first."""
        return sorted(
            (
                obj
                for obj in self.cluster.dependents_of(meta(cronjob)["uid"])
                if obj.get("kind") == "Job" and owned_by(obj, cronjob)
            ),
            key=lambda j: (meta(j).get("creationTimestamp", ""), meta(j)["name"]),
        )

    def _references(self, jobs: Iterable[JsonDict]) -> list[JsonDict]:
        """The references to these Jobs as they are now (those still there), for the status's ``active``."""
        current = [self.get(JOBS, (meta(j).get("namespace", ""), meta(j)["name"])) for j in jobs]
        return [_reference(j) for j in current if j is not None]

    @staticmethod
    def _may_run(cronjob: JsonDict, active: list[JsonDict]) -> bool:
        """Whether a due run starts: not if its concurrency is forbidden and the previous run is still active."""
        return not (active and (cronjob.get("spec") or {}).get("concurrencyPolicy", "Allow") == "Forbid")

    async def _run(
        self, cronjob: JsonDict, due: datetime.datetime, jobs: list[JsonDict], active: list[JsonDict]
    ) -> list[JsonDict]:
        """A run is due: start its Job (``jobs`` gets it too), replacing the active ones if so; the active Jobs then."""
        if (cronjob.get("spec") or {}).get("concurrencyPolicy", "Allow") == "Replace":
            for job in active:
                await self.delete(job, propagation="Background")
            active = []
        started = await self._start(cronjob, due)
        if started is not None:
            active.append(started)
            jobs.append(started)
        return active

    def _due(self, cronjob: JsonDict, status: JsonDict, now: datetime.datetime) -> datetime.datetime | None:
        """The most recent scheduled time not run yet (if still within the starting deadline)."""
        spec = cronjob.get("spec") or {}
        latest = latest_before(spec.get("schedule", ""), spec.get("timeZone"), now)
        since = parse_time(status.get("lastScheduleTime")) or parse_time(meta(cronjob).get("creationTimestamp"))
        if latest is None or since is None or latest <= since:
            return None
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and (now - latest).total_seconds() > int(deadline):
            return None
        return latest

    async def _start(self, cronjob: JsonDict, scheduled: datetime.datetime) -> JsonDict | None:
        spec = cronjob.get("spec") or {}
        template = spec.get("jobTemplate") or {}
        template_meta = template.get("metadata") or {}
        zone = _zone(spec.get("timeZone"))
        annotations = {
            **(template_meta.get("annotations") or {}),
            SCHEDULED_AT: scheduled.astimezone(zone).isoformat().replace("+00:00", "Z"),
        }
        metadata: JsonDict = {
            "name": f"{meta(cronjob)['name']}-{int(scheduled.timestamp()) // 60}",
            "namespace": meta(cronjob).get("namespace"),
            "annotations": annotations,
            "ownerReferences": [new_owner_ref(cronjob)],
        }
        if template_meta.get("labels"):
            metadata["labels"] = dict(template_meta["labels"])
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": metadata,
            "spec": clone(template.get("spec") or {}),
        }
        return await self.create(JOBS, meta(cronjob).get("namespace"), body)

    async def _clean_up(self, cronjob: JsonDict, jobs: list[JsonDict]) -> list[JsonDict]:
        spec = cronjob.get("spec") or {}
        kept = list(jobs)
        for type_, limit in (
            ("Complete", spec.get("successfulJobsHistoryLimit", 3)),
            ("Failed", spec.get("failedJobsHistoryLimit", 1)),
        ):
            done = [
                j
                for j in jobs
                if (finished_condition(j) or {}).get("type") == type_ and not meta(j).get("deletionTimestamp")
            ]
            for job in done[: max(len(done) - int(limit), 0)]:
                await self.delete(job, propagation="Background")
                kept.remove(job)
        return kept
