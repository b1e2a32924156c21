"""Pods on the simulated nodes: the scheduler binds them, the kubelets run them, PodGC collects orphans.

Scheduling sets ``spec.nodeName`` (as ``kube-scheduler``); a pod that fits nowhere gets a
``PodScheduled=False`` condition (Unschedulable) and waits for the nodes to change. The node's
kubelet then moves the pod through Pending -> Running -> Ready after the configured virtual delays,
exits and restarts its containers as its fate and ``restartPolicy`` say, and stops a deleted pod
within its grace period before removing it. Pods of a node that is gone are deleted (PodGC).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.store.watching import Change
from kopf_sim.timing.loopclock import TICKS_PER_SECOND
from kopf_sim.writes import preparing

from . import kubelet as k
from .fates import Fate
from .nodes import is_ready
from .runtime import NODES, PODS, Controller, Key, Manager, key_of
from .scheduling import choose_node, unschedulable_message

SCHEDULER = "kube-scheduler"
DEFAULT_SCHEDULER = "default-scheduler"
TERMINAL = ("Succeeded", "Failed")


class PodController(Controller):
    name = "pods"
    primary = PODS
    watches = (NODES,)
    field_manager = "kubelet"

    def __init__(self, manager: Manager) -> None:
        super().__init__(manager)
        self._runtimes: dict[str, k.PodRuntime] = {}  # by pod uid
        self._pods_on: dict[str, set[str]] = {}  # node -> uids of its pods that are not finished
        self._ips: dict[str, dict[str, str]] = {}  # node -> pod IPs in use -> by which pod uid
        self._waiting: dict[Key, None] = {}  # pods that fit on no node (yet), oldest first

    # -- What concerns which pod -------------------------------------------------------------------------

    def bootstrap(self) -> None:
        self._pods_on.clear()
        for pod in self.cluster.objects(PODS):
            self._track(pod, removed=False)

    def initial_keys(self) -> Iterable[Key]:
        return [key_of(pod) for pod in self.cluster.objects(PODS)]

    def keys_for(self, change: Change) -> Iterable[Key]:
        if change.key == PODS:
            self._track(change.obj, removed=change.type == "DELETED")
            if change.type == "DELETED":
                self._forget(change.obj)
                return self._retry_waiting(1) if (change.obj.get("spec") or {}).get("nodeName") else ()
            keys = [key_of(change.obj)]
            old_phase = ((change.old or {}).get("status") or {}).get("phase")
            if (change.obj.get("status") or {}).get("phase") in TERMINAL and old_phase not in TERMINAL:
                keys.extend(self._retry_waiting(1))  # room for one more on a node
            return keys
        return self.related_keys(change)

    def related_keys(self, change: Change) -> Iterable[Key]:
        """A node changed: waiting pods may fit now; pods of a deleted node are orphans."""
        keys = self._retry_waiting()
        if change.type == "DELETED":
            node = meta(change.obj)["name"]
            keys.extend(
                key_of(pod) for pod in self.cluster.objects(PODS) if (pod.get("spec") or {}).get("nodeName") == node
            )
        return keys

    def _retry_waiting(self, count: int | None = None) -> list[Key]:
        """The waiting pods to try again: all of them (the nodes changed), or the oldest ``count`` (room freed)."""
        keys = list(self._waiting)[:count]
        for key in keys:
            del self._waiting[key]
        return keys

    def _track(self, pod: JsonDict, *, removed: bool) -> None:
        uid = meta(pod).get("uid", "")
        node = (pod.get("spec") or {}).get("nodeName")
        active = not removed and bool(node) and (pod.get("status") or {}).get("phase") not in TERMINAL
        for uids in self._pods_on.values():
            uids.discard(uid)
        if active:
            self._pods_on.setdefault(str(node), set()).add(uid)

    def _forget(self, pod: JsonDict) -> None:
        runtime = self._runtimes.pop(meta(pod).get("uid", ""), None)
        if runtime is not None:
            self._release_ip(runtime)

    def stopped(self) -> None:
        self._runtimes.clear()
        self._ips.clear()
        self._waiting.clear()

    # -- Reconciling -------------------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> None:
        pod = self.get(PODS, key)
        if pod is None:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            if not meta(pod).get("deletionTimestamp"):
                await self._schedule(pod)
            return
        node = self.get(NODES, ("", node_name))
        if node is None:  # PodGC: the pods of a node that is gone are deleted at once
            await self.delete(pod, grace=0)
            return
        if not is_ready(node):
            return  # a NotReady node's kubelet reports nothing
        runtime = self._runtime(pod, node)
        if meta(pod).get("deletionTimestamp"):
            await self._stop(pod, runtime)
            return
        self._advance(pod, runtime)
        host_ip = _internal_ip(node)
        status = k.render_status(pod, runtime, host_ip=host_ip, now=self.now())
        await self.update_status(pod, status)
        if runtime.state == k.DONE:
            self._release_ip(runtime)

    async def _schedule(self, pod: JsonDict) -> None:
        if (pod.get("spec") or {}).get("schedulerName", DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
            return  # another scheduler's pod
        nodes = list(self.cluster.objects(NODES))
        loads = {name: len(uids) for name, uids in self._pods_on.items()}
        chosen, problems = choose_node(pod, nodes, loads)
        if chosen is None:
            self._waiting[key_of(pod)] = None
            conditions = set_unschedulable(pod, unschedulable_message(len(nodes), problems), self.now())
            await self.update_status(pod, {**(pod.get("status") or {}), "conditions": conditions}, manager=SCHEDULER)
            return
        bound = {**pod, "spec": {**pod["spec"], "nodeName": chosen}}
        self._pods_on.setdefault(chosen, set()).add(meta(pod)["uid"])
        await self.update(bound, subresource=preparing.BINDING, manager=SCHEDULER)

    def _runtime(self, pod: JsonDict, node: JsonDict) -> k.PodRuntime:
        uid = meta(pod)["uid"]
        runtime = self._runtimes.get(uid)
        if runtime is None:
            runtime = self._runtimes[uid] = self._adopt(pod, meta(node)["name"])
        return runtime

    def _adopt(self, pod: JsonDict, node: str) -> k.PodRuntime:
        """The record of a pod first seen on a node: new, or carried on from its status (after a restart)."""
        now = self.loop_time
        status = pod.get("status") or {}
        runtime = k.PodRuntime(
            uid=meta(pod)["uid"],
            node=node,
            since=now,
            fate_since=now,
            scheduled_text=status.get("startTime") or self.now(),
        )
        phase = status.get("phase")
        containers = status.get("containerStatuses") or []
        if phase in TERMINAL:
            runtime.state = k.DONE
            runtime.exit_code = 0 if phase == "Succeeded" else 1
        elif phase == "Running" and containers:
            runtime.state = k.RUNNING
            runtime.ready = all(c.get("ready") for c in containers)
            runtime.restarts = max(int(c.get("restartCount") or 0) for c in containers)
            running = (containers[0].get("state") or {}).get("running") or {}
            runtime.started_text = running.get("startedAt") or self.now()
        runtime.ip = status.get("podIP") or None
        if runtime.ip is not None and phase not in TERMINAL:
            self._ips.setdefault(node, {}).setdefault(runtime.ip, runtime.uid)
        return runtime

    # -- The containers' life ----------------------------------------------------------------------------

    def _fate(self, pod: JsonDict, runtime: k.PodRuntime) -> Fate:
        metadata = meta(pod)
        rule = self.manager.fates.rule_for(metadata.get("namespace"), metadata.get("labels"))
        serial = rule.serial if rule is not None else 0
        if serial != runtime.fate_serial:
            runtime.fate_serial = serial
            runtime.fate_since = self.loop_time
        if rule is not None:
            return rule.fate
        if (pod.get("spec") or {}).get("restartPolicy", "Always") != "Always":
            return Fate(exit_code=0)  # runs to completion
        return Fate()

    def _advance(self, pod: JsonDict, runtime: k.PodRuntime) -> None:
        """Move the containers on to where they are by now; set a timer for the next step, if any."""
        fate = runtime.fate = self._fate(pod, runtime)
        steps = {
            k.CREATING: self._creating,
            k.PULL_ERROR: self._pull_error,
            k.RUNNING: self._running,
            k.BACKOFF: self._backing_off,
        }
        for _ in range(1000):  # bounded: each pass moves one step forward or stops
            step = steps.get(runtime.state)  # none for DONE
            if step is None or not step(pod, runtime, fate, self.loop_time):
                return

    # Each step of the containers: whether they have moved on (else, a timer is set for when they will, if ever).

    def _creating(self, pod: JsonDict, runtime: k.PodRuntime, fate: Fate, now: float) -> bool:
        if fate.pull_error:
            runtime.state, runtime.since = k.PULL_ERROR, now
            return True
        due = on_clock(runtime.since + self.manager.settings.pod_start_delay)
        if now < due:
            self.later(due - now, key_of(pod))
            return False
        self._start(runtime, pod, due)
        return True

    def _pull_error(self, pod: JsonDict, runtime: k.PodRuntime, fate: Fate, now: float) -> bool:
        if not fate.pull_error:
            runtime.state, runtime.since, runtime.pull_backoff = k.CREATING, now, False
            return True
        due = on_clock(runtime.since + k.PULL_BACKOFF)
        if not runtime.pull_backoff and now < due:
            self.later(due - now, key_of(pod))
        runtime.pull_backoff = now >= due
        return False

    def _running(self, pod: JsonDict, runtime: k.PodRuntime, fate: Fate, now: float) -> bool:
        started = max(runtime.since, runtime.fate_since)
        exit_due = None
        if fate.exit_code is not None:
            run_time = fate.run_time if fate.run_time is not None else self.manager.settings.pod_run_time
            exit_due = on_clock(started + run_time)
        ready_due = on_clock(started + self._ready_delay(pod)) if fate.ready else None
        _update_readiness(runtime, ready_due, exit_due, now)
        if exit_due is not None and exit_due <= now:
            self._exit(runtime, fate.exit_code or 0, exit_due)
            policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
            runtime.state = k.BACKOFF if k.restarts_after(policy, fate.exit_code or 0) else k.DONE
            runtime.since = exit_due
            return True
        dues = [d for d in (exit_due, ready_due if not runtime.ready else None) if d is not None]
        if dues:
            self.later(min(dues) - now, key_of(pod))
        return False

    def _backing_off(self, pod: JsonDict, runtime: k.PodRuntime, fate: Fate, now: float) -> bool:
        due = on_clock(runtime.since + k.backoff_delay(runtime.restarts))
        if now < due:
            self.later(due - now, key_of(pod))
            return False
        runtime.restarts += 1
        self._start(runtime, pod, due)
        return True

    def _start(self, runtime: k.PodRuntime, pod: JsonDict, when: float) -> None:
        runtime.state, runtime.since, runtime.ready = k.RUNNING, when, False
        runtime.started_text = self.now()
        if runtime.ip is None:
            runtime.ip = self._allocate_ip(runtime.node, runtime.uid)

    def _exit(self, runtime: k.PodRuntime, code: int, when: float) -> None:
        runtime.ready = False
        runtime.exit_code = code
        runtime.last_exit = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": runtime.started_text,
            "finishedAt": self.now(),
        }

    def _ready_delay(self, pod: JsonDict) -> float:
        delay = self.manager.settings.pod_ready_delay
        for container in (pod.get("spec") or {}).get("containers") or []:
            probe = container.get("readinessProbe") or {}
            delay = max(delay, float(probe.get("initialDelaySeconds") or 0))
        return delay

    async def _stop(self, pod: JsonDict, runtime: k.PodRuntime) -> None:
        """A deleted pod: its containers get SIGTERM, stop (within the grace period), then it is removed."""
        now = self.loop_time
        if runtime.stop_at is None:
            grace = float(meta(pod).get("deletionGracePeriodSeconds") or 0)
            fate = self._fate(pod, runtime)
            delay = fate.stop_delay if fate.stop_delay is not None else self.manager.settings.pod_stop_delay
            started = runtime.state in (k.RUNNING, k.BACKOFF)
            runtime.stop_at = on_clock(now + (min(delay, grace) if started else 0.0))
        if now < runtime.stop_at:
            self.later(runtime.stop_at - now, key_of(pod))
            return
        await self.delete(pod, grace=0)

    def _release_ip(self, runtime: k.PodRuntime) -> None:
        """The pod's IP is free again (its pod finished or is gone); the status keeps showing it."""
        used = self._ips.get(runtime.node, {})
        if runtime.ip is not None and used.get(runtime.ip) == runtime.uid:
            del used[runtime.ip]

    def _allocate_ip(self, node_name: str, uid: str) -> str | None:
        node = self.get(NODES, ("", node_name))
        cidr = ((node or {}).get("spec") or {}).get("podCIDR")
        if not cidr:
            return None
        try:
            network = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        used = self._ips.setdefault(node_name, {})
        hosts = list(network.hosts())[1:]  # the first one is the gateway
        if not hosts:
            return None
        # From a place derived from the pod's uid (seeded): as a runtime's IPAM hands out addresses, not in order.
        start = int(uid.replace("-", ""), 16) % len(hosts) if _is_hex(uid.replace("-", "")) else 0
        for step in range(len(hosts)):
            text = str(hosts[(start + step) % len(hosts)])
            if text not in used:
                used[text] = uid
                return text
        return None


def _update_readiness(runtime: k.PodRuntime, ready_due: float | None, exit_due: float | None, now: float) -> None:
    """Ready once its readiness is due (unless it exits first); not ready if its fate says it never will be."""
    if ready_due is None:
        runtime.ready = False
    elif ready_due <= now and (exit_due is None or ready_due <= exit_due):
        runtime.ready = True


def _is_hex(text: str) -> bool:
    return bool(text) and all(char in "0123456789abcdefABCDEF" for char in text)


def _internal_ip(node: JsonDict) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return None


def set_unschedulable(pod: JsonDict, message: str, now: str) -> list[JsonDict]:
    from .runtime import set_condition

    conditions = [dict(c) for c in (pod.get("status") or {}).get("conditions") or []]
    return set_condition(conditions, "PodScheduled", "False", "Unschedulable", message, now, probe=True)


def on_clock(when: float) -> float:
    """A due time as the loop's clock tells it (whole ticks): a sum of floats may lie a hair after the tick it
    means, and then the key is reconciled over and over at that tick, never due (until the spinning guard)."""
    return round(when * TICKS_PER_SECOND) / TICKS_PER_SECOND
