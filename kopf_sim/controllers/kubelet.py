"""What a node's kubelet does with a pod: start its containers, probe them, restart them, report the status.

The containers of a pod move through the states of a :class:`PodRuntime` in (virtual) time:
``creating`` (image pull, sandbox) -> ``running`` (ready after the readiness delay, unless the fate
says never) -> ``exited`` -> either ``backoff`` (CrashLoopBackOff, then running again, with the
kubelet's doubling back-off from 10 s to 5 min) or ``done`` (Succeeded/Failed), as the pod's
``restartPolicy`` says. The fate (a test's rule, or the default) decides whether and when they exit.
The status is rendered from this state the way a kubelet reports it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

from kopf_sim.kube.objects import JsonDict, meta

from .fates import Fate
from .runtime import set_condition

__all__ = ["PodRuntime", "backoff_delay", "render_status"]

CREATING, PULL_ERROR, RUNNING, BACKOFF, DONE = "creating", "pull-error", "running", "backoff", "done"
BACKOFF_START, BACKOFF_MAX = 10.0, 300.0
PULL_BACKOFF = 10.0


@dataclasses.dataclass
class PodRuntime:
    """The kubelet's own record of one pod (by uid): where its containers are, since when (loop time)."""

    uid: str
    node: str
    state: str = CREATING
    since: float = 0.0  # loop time when the current state began
    fate: Fate = dataclasses.field(default_factory=Fate)
    fate_serial: int = -1  # which rule decided the fate (0: the default)
    fate_since: float = 0.0
    ready: bool = False
    restarts: int = 0
    exit_code: int | None = None  # of the last exit
    ip: str | None = None
    started_text: str | None = None  # when the current (or last) run started
    scheduled_text: str | None = None
    last_exit: JsonDict | None = None  # the terminated state of the previous run
    stop_at: float | None = None  # when a deleted pod's containers are stopped
    pull_backoff: bool = False


def backoff_delay(restarts: int) -> float:
    return float(min(BACKOFF_START * 2**restarts, BACKOFF_MAX))


def restarts_after(policy: str, exit_code: int) -> bool:
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


def image_id(image: str) -> str:
    name = image.split("@")[0].rsplit(":", 1)[0] if ":" in image.split("/")[-1] else image.split("@")[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif "." not in name.split("/")[0] and ":" not in name.split("/")[0]:
        name = f"docker.io/{name}"
    return f"{name}@sha256:{_digest('image', image)}"


def _container_status(spec: Mapping[str, Any], runtime: PodRuntime, pod_name: str) -> JsonDict:
    name = spec.get("name", "")
    image = spec.get("image", "")
    status: JsonDict = {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": False,
        "restartCount": runtime.restarts,
        "started": False,
        "lastState": {},
    }
    container_id = f"containerd://{_digest(runtime.uid, name, runtime.restarts)[:64]}"
    if runtime.state in (RUNNING, BACKOFF, DONE):
        status["imageID"] = image_id(image)
    if runtime.state == CREATING:
        status["state"] = {"waiting": {"reason": "ContainerCreating"}}
    elif runtime.state == PULL_ERROR:
        if runtime.pull_backoff:
            status["state"] = {
                "waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
            }
        else:
            status["state"] = {
                "waiting": {
                    "reason": "ErrImagePull",
                    "message": f'failed to pull and unpack image "{image}": not found (the fate of this pod)',
                }
            }
    elif runtime.state == RUNNING:
        status.update(
            containerID=container_id,
            ready=runtime.ready,
            started=True,
            state={"running": {"startedAt": runtime.started_text}},
        )
    elif runtime.state == BACKOFF:
        delay = int(backoff_delay(runtime.restarts))
        status.update(
            containerID=container_id,
            state={
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {_duration(delay)} restarting failed container={name} pod={pod_name}"
                    f"({runtime.uid})",
                }
            },
        )
    elif runtime.state == DONE and runtime.last_exit is not None:
        status.update(containerID=container_id, state={"terminated": dict(runtime.last_exit, containerID=container_id)})
    if runtime.last_exit is not None and runtime.state in (RUNNING, BACKOFF):
        status["lastState"] = {"terminated": dict(runtime.last_exit)}
    return status


def _duration(seconds: int) -> str:
    minutes, rest = divmod(seconds, 60)
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


def render_status(pod: JsonDict, runtime: PodRuntime, *, host_ip: str | None, now: str) -> JsonDict:
    """The pod's status as its kubelet reports it in the runtime's state."""
    spec = pod.get("spec") or {}
    old = pod.get("status") or {}
    containers = list(spec.get("containers") or [])
    init_containers = list(spec.get("initContainers") or [])
    name = f"{meta(pod).get('name', '')}_{meta(pod).get('namespace', '')}"
    started = runtime.state in (RUNNING, BACKOFF, DONE)
    phase = _phase(runtime, started=started)
    conditions = _conditions(old, runtime, containers, init_containers, phase=phase, started=started, now=now)
    status: JsonDict = {"phase": phase, "conditions": conditions}
    if host_ip:
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
    if runtime.ip and started:
        status["podIP"] = runtime.ip
        status["podIPs"] = [{"ip": runtime.ip}]
    if runtime.scheduled_text:
        status["startTime"] = runtime.scheduled_text
    if init_containers:
        status["initContainerStatuses"] = [_init_status(c, runtime) for c in init_containers]
    status["containerStatuses"] = [_container_status(c, runtime, name) for c in containers]
    status["qosClass"] = old.get("qosClass") or "BestEffort"
    return status


def _phase(runtime: PodRuntime, *, started: bool) -> str:
    if runtime.state == DONE:
        return "Succeeded" if runtime.exit_code == 0 else "Failed"
    return "Running" if started else "Pending"


def _conditions(
    old: JsonDict,
    runtime: PodRuntime,
    containers: list[JsonDict],
    init_containers: list[JsonDict],
    *,
    phase: str,
    started: bool,
    now: str,
) -> list[JsonDict]:
    """The pod's conditions in the kubelet's order: started, initialized, ready, containers ready, scheduled."""
    conditions: list[JsonDict] = [dict(c) for c in old.get("conditions") or []]
    conditions = set_condition(
        conditions, "PodReadyToStartContainers", "True" if started else "False", "", "", now, probe=True
    )
    if init_containers and not started:
        waiting = " ".join(c.get("name", "") for c in init_containers)
        conditions = set_condition(
            conditions,
            "Initialized",
            "False",
            "ContainersNotInitialized",
            f"containers with incomplete status: [{waiting}]",
            now,
            probe=True,
        )
    else:
        conditions = set_condition(conditions, "Initialized", "True", "", "", now, probe=True)
    unready = [c.get("name", "") for c in containers if not (runtime.ready and runtime.state == RUNNING)]
    if runtime.state == DONE:
        reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        ready_status, message = "False", ""
    elif unready:
        reason, ready_status = "ContainersNotReady", "False"
        message = f"containers with unready status: [{' '.join(unready)}]"
    else:
        reason, ready_status, message = "", "True", ""
    conditions = set_condition(conditions, "Ready", ready_status, reason, message, now, probe=True)
    conditions = set_condition(conditions, "ContainersReady", ready_status, reason, message, now, probe=True)
    conditions = set_condition(conditions, "PodScheduled", "True", "", "", now, probe=True)
    return [_tidy(c) for c in sorted(conditions, key=_condition_order)]


def _init_status(spec: Mapping[str, Any], runtime: PodRuntime) -> JsonDict:
    name, image = spec.get("name", ""), spec.get("image", "")
    status: JsonDict = {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "lastState": {},
    }
    if runtime.state in (CREATING, PULL_ERROR):
        status["state"] = {"waiting": {"reason": "PodInitializing"}}
    else:
        container_id = f"containerd://{_digest(runtime.uid, 'init', name)[:64]}"
        status.update(
            imageID=image_id(image),
            containerID=container_id,
            ready=True,
            state={
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": runtime.scheduled_text,
                    "finishedAt": runtime.scheduled_text,
                    "containerID": container_id,
                }
            },
        )
    return status


_ORDER = {"PodReadyToStartContainers": 0, "Initialized": 1, "Ready": 2, "ContainersReady": 3, "PodScheduled": 4}


def _condition_order(cond: Mapping[str, Any]) -> int:
    return _ORDER.get(str(cond.get("type")), 5)


def _tidy(cond: JsonDict) -> JsonDict:
    """A condition without empty reason/message fields, as the kubelet omits them."""
    return {k: v for k, v in cond.items() if v != "" or k not in ("reason", "message")}
