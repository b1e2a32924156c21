"""Jobs and CronJobs: pods to completion, back-off limits, indexes, deadlines, TTLs, schedules."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kopf_sim.controllers import ControllerManager, Fate
from kopf_sim.kube.printers import job_completions, job_duration, job_status
from pytest_kopf.cluster import KopfCluster

from .workloads import job

JsonDict = dict[str, Any]


def now() -> float:
    return asyncio.get_running_loop().time()


def finished(obj: JsonDict | None) -> str | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] in ("Complete", "Failed") and cond["status"] == "True":
            return str(cond["type"])
    return None


async def test_a_job_completes(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(job("once"))
    obj = await kopf_cluster.wait_for("jobs", "once", condition=finished)
    assert now() == 2.0  # scheduled at 0, running at 1, done after pod_run_time
    status = obj["status"]
    assert finished(obj) == "Complete"
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert status["succeeded"] == 1
    assert "active" not in status and "failed" not in status
    assert status["startTime"] == "2026-01-01T00:00:00Z"
    assert status["completionTime"] == "2026-01-01T00:00:02Z"
    assert (job_status(obj, kopf_cluster.sim.now), job_completions(obj, kopf_cluster.sim.now)) == ("Complete", "1/1")
    assert job_duration(obj, kopf_cluster.sim.now) == "2s"
    [pod] = await kopf_cluster.list("pods")
    assert pod["metadata"]["name"].startswith("once-")
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "once"
    assert pod["metadata"]["labels"]["controller-uid"] == obj["metadata"]["uid"]
    assert pod["status"]["phase"] == "Succeeded"
    assert "finalizers" not in pod["metadata"]  # counted, so released


async def test_completions_in_parallel(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    controllers.fate("job=batch", Fate.succeed(after=10))
    await kopf_cluster.create(job("batch", completions=5, parallelism=2))
    await asyncio.sleep(5)
    obj = await kopf_cluster.get("jobs", "batch")
    assert obj is not None
    assert obj["status"]["active"] == 2
    assert obj["status"]["ready"] == 2
    await kopf_cluster.wait_for("jobs", "batch", condition=finished, timeout=120)
    assert now() == 33.0  # three rounds of 11 s: 2 + 2 + 1 pods
    assert len(await kopf_cluster.list("pods")) == 5


async def test_the_back_off_limit(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    controllers.fate("job=flaky", Fate.fail(exit_code=2, after=1))
    await kopf_cluster.create(job("flaky", backoffLimit=2))
    obj = await kopf_cluster.wait_for("jobs", "flaky", condition=finished, timeout=300)
    assert finished(obj) == "Failed"
    assert obj["status"]["failed"] == 3
    failed = next(c for c in obj["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )
    # Each failed pod is replaced after the pod-failure back-off: 10 s, then 20 s.
    starts = sorted(p["metadata"]["creationTimestamp"] for p in await kopf_cluster.list("pods"))
    assert starts == ["2026-01-01T00:00:00Z", "2026-01-01T00:00:12Z", "2026-01-01T00:00:34Z"]
    assert job_status(obj, kopf_cluster.sim.now) == "Failed"


async def test_restarts_count_against_the_limit_with_on_failure(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    controllers.fate("job=restarty", Fate.crash_loop())
    body = job("restarty", backoffLimit=1)
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    await kopf_cluster.create(body)
    obj = await kopf_cluster.wait_for("jobs", "restarty", condition=finished, timeout=300)
    assert finished(obj) == "Failed"
    await asyncio.sleep(2)
    assert [p for p in await kopf_cluster.list("pods")] == []  # the active pod was deleted


async def test_indexed_completions(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(job("indexed", completions=3, parallelism=3, completionMode="Indexed"))
    obj = await kopf_cluster.wait_for("jobs", "indexed", condition=finished)
    assert obj["status"]["completedIndexes"] == "0-2"
    pods = await kopf_cluster.list("pods")
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods)
    assert indexes == ["0", "1", "2"]
    assert sorted(p["spec"]["hostname"] for p in pods) == ["indexed-0", "indexed-1", "indexed-2"]


async def test_the_active_deadline(kopf_cluster: KopfCluster, controllers: ControllerManager) -> None:
    controllers.fate("job=forever", Fate.run())
    await kopf_cluster.create(job("forever", activeDeadlineSeconds=60))
    obj = await kopf_cluster.wait_for("jobs", "forever", condition=finished, timeout=120)
    assert now() == 60.0
    assert next(c for c in obj["status"]["conditions"] if c["type"] == "Failed")["reason"] == "DeadlineExceeded"


async def test_a_finished_job_is_deleted_after_its_ttl(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(job("short-lived", ttlSecondsAfterFinished=100))
    await kopf_cluster.wait_for("jobs", "short-lived", condition=finished)
    await kopf_cluster.wait_gone("jobs", "short-lived", timeout=200)
    assert now() == 102.0
    await asyncio.sleep(1)
    assert await kopf_cluster.list("pods") == []


async def test_a_suspended_job_runs_no_pods(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(job("held", suspend=True))
    obj = await kopf_cluster.wait_for("jobs", "held", condition=lambda j: j["status"].get("conditions"))
    assert obj["status"]["conditions"][0]["type"] == "Suspended"
    await asyncio.sleep(60)
    assert await kopf_cluster.list("pods") == []
    await kopf_cluster.patch("jobs", "held", {"spec": {"suspend": False}})
    obj = await kopf_cluster.wait_for("jobs", "held", condition=finished)
    assert next(c for c in obj["status"]["conditions"] if c["type"] == "Suspended")["status"] == "False"


def cronjob(name: str, schedule: str, **spec: Any) -> JsonDict:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"metadata": {"labels": {"from": name}}, "spec": job(name)["spec"]},
            **spec,
        },
    }


async def jobs_of(kopf_cluster: KopfCluster) -> list[str]:
    return sorted(j["metadata"]["name"] for j in await kopf_cluster.list("jobs"))


async def test_jobs_on_schedule_in_virtual_time(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(cronjob("tick", "*/5 * * * *"))
    await asyncio.sleep(60 * 60 + 30)  # an hour, in microseconds
    names = await jobs_of(kopf_cluster)
    # Runs at :05 ... :55 and :60; three successful ones are kept (successfulJobsHistoryLimit).
    minute = 29453760  # 2026-01-01T00:00Z in minutes since the epoch
    assert names == [f"tick-{minute + 50}", f"tick-{minute + 55}", f"tick-{minute + 60}"]
    obj = await kopf_cluster.get("cronjobs", "tick")
    assert obj is not None
    assert obj["status"]["lastScheduleTime"] == "2026-01-01T01:00:00Z"
    assert obj["status"]["lastSuccessfulTime"] == "2026-01-01T01:00:02Z"
    assert "active" not in obj["status"]  # all done
    newest = await kopf_cluster.get("jobs", f"tick-{minute + 60}")
    assert newest is not None
    assert newest["metadata"]["labels"] == {"from": "tick"}
    assert (
        newest["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2026-01-01T01:00:00Z"
    )
    assert newest["metadata"]["ownerReferences"][0]["kind"] == "CronJob"


@pytest.mark.parametrize(
    ("deadline", "minutes"),
    [
        (None, [1, 2, 4]),  # a run missed while another is active starts when that one finishes
        (10, [1, 3, 5]),  # ... unless that is later than the starting deadline: then it is skipped
    ],
)
async def test_forbidden_concurrency(
    kopf_cluster: KopfCluster, controllers: ControllerManager, deadline: int | None, minutes: list[int]
) -> None:
    controllers.fate("job=slow", Fate.succeed(after=90))
    spec: dict[str, Any] = {"concurrencyPolicy": "Forbid"}
    if deadline is not None:
        spec["startingDeadlineSeconds"] = deadline
    await kopf_cluster.create(cronjob("slow", "* * * * *", **spec))
    await asyncio.sleep(5 * 60 + 30)
    assert await jobs_of(kopf_cluster) == [f"slow-{29453760 + m}" for m in minutes]


async def test_replacing_concurrency_deletes_the_active_run(
    kopf_cluster: KopfCluster, controllers: ControllerManager
) -> None:
    controllers.fate("job=busy", Fate.run())
    await kopf_cluster.create(cronjob("busy", "*/10 * * * *", concurrencyPolicy="Replace"))
    await asyncio.sleep(25 * 60)
    minute = 29453760
    assert await jobs_of(kopf_cluster) == [f"busy-{minute + 20}"]


@pytest.mark.parametrize(
    ("zone", "expected"), [("UTC", "2026-01-01T02:00:00Z"), ("Europe/Berlin", "2026-01-01T02:00:00+01:00")]
)
async def test_schedules_in_time_zones(kopf_cluster: KopfCluster, zone: str, expected: str) -> None:
    await kopf_cluster.create(cronjob("zoned", "0 2 * * *", timeZone=zone))
    await kopf_cluster.wait_for("jobs", f"zoned-{29453760 + 120 - (60 if zone != 'UTC' else 0)}", timeout=3 * 3600)
    [obj] = await kopf_cluster.list("jobs")
    assert obj["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == expected


async def test_a_suspended_cronjob_starts_nothing(kopf_cluster: KopfCluster) -> None:
    await kopf_cluster.create(cronjob("paused", "@hourly", suspend=True))
    await asyncio.sleep(3 * 3600)
    assert await jobs_of(kopf_cluster) == []
    await kopf_cluster.patch("cronjobs", "paused", {"spec": {"suspend": False}})
    await asyncio.sleep(0.5)
    assert await jobs_of(kopf_cluster) == ["paused-29453940"]  # the most recent missed run (03:00), at once
    await asyncio.sleep(3600 + 30)
    assert await jobs_of(kopf_cluster) == ["paused-29453940", "paused-29454000"]  # and 04:00
