"""
The differential harness: the same operator, the same actions, two frameworks, one comparison.

For each framework (ours, and the published Kopf in its own venv, see :mod:`peer`), a scenario gets:
a fresh ``kopf-sim serve`` on 127.0.0.1 (a free port, its own kubeconfig), ``kopf run`` of the
operator file as a subprocess, the scenario's scripted HTTP actions against the served cluster,
then SIGTERM and the exit. What each run leaves is an :class:`Observation`: the handler calls
(recorded by the operators themselves into ``$COMPAT_CALLS``), the objects' final annotations,
status and finalizers, the ``kind: Event`` objects posted, the log lines, the exit code.
:func:`compare` turns two observations into :class:`Difference` records with the volatile parts
(timestamps, uids, versions, ports) masked; :data:`INTENTIONAL` explains the differences we keep.
Both frameworks run at once (each with its own cluster), so a scenario costs one run's time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tests.serving import served_simulator

HERE = pathlib.Path(__file__).parent
OPERATORS = HERE / "operators"
ROOT = HERE.parent.parent
CRD = ROOT / "examples" / "crd.yaml"
PEERING_CRDS = ROOT / "peering.yaml"

#: Real time, real processes: generous for a loaded 2-core machine, yet bounded.
SETTLE_TIMEOUT = 30.0
EXIT_TIMEOUT = 20.0


# -------------------------------------------------------------------------------------------------
# The served cluster and the actions against it.
# -------------------------------------------------------------------------------------------------


class Cluster:
    """A ``kopf-sim serve`` subprocess and a tiny JSON client of it (plain HTTP on loopback)."""

    def __init__(self, workdir: pathlib.Path, manifests: Sequence[pathlib.Path]) -> None:
        self._stack = contextlib.ExitStack()
        loads = [arg for manifest in manifests for arg in ("--load", str(pathlib.Path(ROOT, manifest)))]
        served = self._stack.enter_context(served_simulator(workdir / "kubeconfig", *loads, timeout=30))
        self.kubeconfig, self.url = served.kubeconfig, served.url

    def stop(self) -> None:
        self._stack.close()

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": content_type, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                return e.code, json.loads(payload)
            except ValueError:
                return e.code, payload.decode(errors="replace")

    def get(self, path: str) -> Any:
        status, body = self.request("GET", path)
        return body if status == 200 else None


def kex_path(namespace: str = "default", name: str | None = None, *, plural: str = "kopfexamples") -> str:
    base = f"/apis/kopf.dev/v1/namespaces/{namespace}/{plural}"
    return f"{base}/{name}" if name else base


# -------------------------------------------------------------------------------------------------
# Scenarios: steps of actions and waits.
# -------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Context:
    """What the steps see: the cluster, the calls recorded so far, the running operator."""

    cluster: Cluster
    calls_path: pathlib.Path
    run: OperatorRun | None = None
    responses: list[Any] = dataclasses.field(default_factory=list)
    extra_env: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def calls(self) -> list[dict[str, Any]]:
        try:
            text = self.calls_path.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def called(self, fn: str, count: int = 1, **match: Any) -> bool:
        found = [
            call
            for call in self.calls
            if call.get("fn") == fn and all(call.get(key) == value for key, value in match.items())
        ]
        return len(found) >= count


Step = Callable[[Context], Any]


@dataclasses.dataclass(frozen=True)
class Wait:
    """A step that waits (in real time, bounded) until the condition holds."""

    condition: Callable[[Context], bool]
    what: str
    timeout: float = SETTLE_TIMEOUT


@dataclasses.dataclass(frozen=True)
class Pause:
    """A step that gives the frameworks a moment (for the things that must not happen, or to settle)."""

    seconds: float


@dataclasses.dataclass(frozen=True)
class Start:
    """A step that starts the operator (by default, it starts before the first step)."""


@dataclasses.dataclass(frozen=True)
class Stop:
    """A step that stops the operator with SIGTERM and waits for its exit."""


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    operator: str
    steps: Sequence[Step | Wait | Pause | Start | Stop]
    objects: Sequence[str] = ()  # the paths of the objects to look at in the end
    namespaces: Sequence[str] = ("default",)
    args: Sequence[str] = ("--standalone", "--all-namespaces")
    manifests: Sequence[pathlib.Path] = (CRD,)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    setup: Callable[[pathlib.Path], Mapping[str, str]] | None = None  # per run: e.g. certificates, ports
    quiet_period: float = 0.5  # after the last step: for the stray calls to show up


# -------------------------------------------------------------------------------------------------
# Running a scenario under one framework.
# -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Framework:
    name: str
    kopf: pathlib.Path


class OperatorRun:
    """``kopf run`` as a subprocess, with its output collected into a file."""

    def __init__(self, framework: Framework, scenario: Scenario, workdir: pathlib.Path, context: Context) -> None:
        self.log_path = workdir / "operator.log"
        self._log = open(self.log_path, "a")  # noqa: SIM115 - closed in stop(); appended on restarts
        env = {
            **os.environ,
            **scenario.env,
            **context.extra_env,
            "KUBECONFIG": str(context.cluster.kubeconfig),
            "COMPAT_CALLS": str(context.calls_path),
            "PYTHONPATH": str(OPERATORS),
            "PYTHONUNBUFFERED": "1",
        }
        args = [str(framework.kopf), "run", "--verbose", *scenario.args, str(OPERATORS / scenario.operator)]
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=str(workdir))
        self.exit_code: int | str | None = None

    def stop(self) -> None:
        if self.exit_code is not None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self.process.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            self.exit_code = "hung"
        self._log.close()


@dataclasses.dataclass
class Observation:
    framework: str
    calls: list[dict[str, Any]]
    objects: dict[str, Any]
    events: list[dict[str, Any]]
    logs: list[tuple[str, str, str]]  # (logger, level, message)
    exit_code: int | str | None
    failures: list[str]  # the steps that did not happen (e.g. a wait that timed out)
    responses: list[Any] = dataclasses.field(default_factory=list)  # the API's answers to the actions


def run_scenario(framework: Framework, scenario: Scenario, workdir: pathlib.Path) -> Observation:
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(workdir, scenario.manifests)
    context = Context(
        cluster=cluster,
        calls_path=workdir / "calls.jsonl",
        extra_env=scenario.setup(workdir) if scenario.setup is not None else {},
    )
    failures: list[str] = []
    try:
        steps = list(scenario.steps)
        if not any(isinstance(step, Start) for step in steps):
            steps.insert(0, Start())
        for step in steps:
            if isinstance(step, Start):
                context.run = OperatorRun(framework, scenario, workdir, context)
            elif isinstance(step, Stop):
                assert context.run is not None
                context.run.stop()
            elif isinstance(step, Pause):
                time.sleep(step.seconds)
            elif isinstance(step, Wait):
                if not _wait(step, context):
                    failures.append(f"timed out: {step.what}")
                    break
            else:
                context.responses.append(step(context))
        time.sleep(scenario.quiet_period)
        objects = {path: _final_state(cluster.get(path)) for path in scenario.objects}
        events = _events(cluster, scenario.namespaces)
    finally:
        if context.run is not None:
            context.run.stop()
        cluster.stop()
    assert context.run is not None
    return Observation(
        framework=framework.name,
        calls=context.calls,
        responses=[mask_value(response) for response in context.responses if response is not None],
        objects=objects,
        events=events,
        logs=parse_logs(context.run.log_path.read_text(errors="replace")),
        exit_code=context.run.exit_code,
        failures=failures,
    )


def _wait(step: Wait, context: Context) -> bool:
    deadline = time.monotonic() + step.timeout
    while time.monotonic() < deadline:
        if step.condition(context):
            return True
        if context.run is not None and context.run.process.poll() is not None:
            return step.condition(context)  # the operator has exited: nothing more will come
        time.sleep(0.1)
    return False


def _final_state(body: Any) -> Any:
    if not isinstance(body, Mapping):
        return "absent"
    metadata = body.get("metadata", {})
    annotations = {
        key: mask_annotation(value)
        for key, value in (metadata.get("annotations") or {}).items()
        if key != "kubectl.kubernetes.io/last-applied-configuration"
    }
    return {
        "annotations": annotations,
        "labels": metadata.get("labels") or {},
        "finalizers": metadata.get("finalizers") or [],
        "status": mask_value(body.get("status") or {}),
        "spec": body.get("spec") or {},
    }


def _events(cluster: Cluster, namespaces: Iterable[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for namespace in namespaces:
        listing = cluster.get(f"/api/v1/namespaces/{namespace}/events") or {}
        for item in listing.get("items", []):
            involved = item.get("involvedObject") or {}
            events.append(
                {
                    "object": f"{involved.get('kind')}/{involved.get('name')}",
                    "type": item.get("type"),
                    "reason": item.get("reason"),
                    "message": mask_text(item.get("message") or ""),
                    "source": (item.get("source") or {}).get("component"),
                    "reportingComponent": item.get("reportingComponent"),
                    "name_prefix": re.sub(r"[a-z0-9]{5}$", "*", (item.get("metadata") or {}).get("name", "")),
                }
            )
    return events


# -------------------------------------------------------------------------------------------------
# Masking the volatile parts.
# -------------------------------------------------------------------------------------------------

_MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uid>"),
    (re.compile(r"'resourceVersion': '\d+'"), "'resourceVersion': '<rv>'"),
    (re.compile(r'"resourceVersion": ?"\d+"'), '"resourceVersion":"<rv>"'),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r" at 0x[0-9a-f]+"), " at 0x<addr>"),
    (re.compile(r"\b\d+\.\d+(?= ?s(?:ec(?:ond)?s?)?\b)"), "<seconds>"),
    (re.compile(r"/tmp/[\w./-]+"), "<tmp>"),
]


def mask_text(text: str) -> str:
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


def mask_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: mask_value(val) for key, val in value.items()}
    if isinstance(value, list):
        return [mask_value(val) for val in value]
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, float):
        return "<float>"
    return value


def mask_annotation(value: str) -> Any:
    """Kopf's annotations hold JSON: compare them parsed (and masked), with their exact text's ending."""
    try:
        parsed = json.loads(value)
    except ValueError:
        return mask_text(value)
    return {"json": mask_value(parsed), "trailing_newline": value.endswith("\n")}


_LOG_LINE = re.compile(r"^\[[^\]]+\] (?P<logger>\S+)\s+\[(?P<level>[A-Z]+)\s*\] (?P<message>.*)$")


def parse_logs(text: str) -> list[tuple[str, str, str]]:
    """The log records as (logger, level, masked message); the continuation lines (tracebacks) are dropped."""
    records: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        match = _LOG_LINE.match(line)
        if match:
            records.append((match["logger"], match["level"], mask_text(match["message"])))
    return records


# -------------------------------------------------------------------------------------------------
# Comparing.
# -------------------------------------------------------------------------------------------------

#: The DEBUG lines that users' tests commonly wait for: compared like INFO+ lines.
COMPARED_DEBUG = [
    re.compile(r"^(\[[^\]]+\] )?Something has changed, but we are not interested"),
    re.compile(r"^(\[[^\]]+\] )?Handler '[^']+' is invoked\.$"),
    re.compile(r"^(\[[^\]]+\] )?Handling cycle is finished, waiting for new changes\.$"),
    re.compile(r"^Root tasks are stopped: "),
    re.compile(r"^Hung tasks stopping is skipped: "),
    re.compile(r"^(\[[^\]]+\] )?Daemon '[^']+' "),
    re.compile(r"^(\[[^\]]+\] )?Timer '[^']+' "),
    re.compile(r"^(\[[^\]]+\] )?Removing the finalizer"),
    re.compile(r"^(\[[^\]]+\] )?Adding the finalizer"),
    re.compile(r"^(\[[^\]]+\] )?Deletion, but we are not interested"),
]

#: The loggers of the low-level libraries (not the frameworks' business).
_FOREIGN_LOGGERS = re.compile(r"^(urllib3|asyncio|aiohttp|kubernetes|concurrent|pykube)")


def compared_logs(logs: Iterable[tuple[str, str, str]]) -> set[tuple[str, str]]:
    """The (level, message) pairs to compare: INFO and above, and the DEBUG lines tests wait for."""
    result: set[tuple[str, str]] = set()
    for logger, level, message in logs:
        if _FOREIGN_LOGGERS.match(logger):
            continue
        if level == "DEBUG" and not any(pattern.search(message) for pattern in COMPARED_DEBUG):
            continue
        result.add((level, message))
    return result


@dataclasses.dataclass(frozen=True)
class Difference:
    scenario: str
    aspect: str  # calls, objects, events, logs, exit_code, steps
    detail: str
    reason: str | None = None  # why it is intentional (None: unexplained)

    def __str__(self) -> str:
        mark = f"  [intentional: {self.reason}]" if self.reason else ""
        return f"{self.scenario}: {self.aspect}: {self.detail}{mark}"


@dataclasses.dataclass(frozen=True)
class Intentional:
    """A difference that we keep, with the reason (also listed in docs/kopf.md)."""

    aspect: str
    pattern: str  # a regex searched in the difference's detail
    reason: str
    scenario: str | None = None


#: The differences we keep on purpose. Each is listed in docs/kopf.md ("Compatibility") with its reason.
INTENTIONAL: list[Intentional] = [
    Intentional(
        "events",
        r'^only ours: .*"reason": "Logging"',
        "the objects' log messages are posted as k8s-events by default (settings.posting.loggers=True), as the "
        "published framework's documentation describes; the published 1.45 has it off by default",
    ),
    Intentional(
        "events",
        r'^only peer: .*"reason": "Warned"',
        scenario="events-disabled",
        reason="with settings.posting.enabled=False, no k8s-events are posted, those of kopf.warn() included, "
        "as the published framework's documentation says; the published 1.45 still posts kopf.warn()'s",
    ),
    Intentional(
        "logs",
        r"^only ours: \[ERROR\] (Startup has failed: |Root task '.*' has failed with an exception)",
        "a failed startup is also reported in the log, not only as the traceback at exit",
    ),
    Intentional(
        "logs",
        r"^only peer: \[WARNING\] .*Merge-patching finished with inconsistencies: .*"
        r"\('remove', \('metadata', 'annotations'\)",
        "the published framework warns when the last annotation is removed (the API drops the empty map): "
        "a false alarm, not repeated",
    ),
    Intentional(
        "logs",
        r"^only peer: \[WARNING\] Unprocessed streams left for ",
        "at exit, the objects sleeping out their handlers' delays are woken and exit at once; the published "
        "framework waits out settings.batching.exit_timeout for them and then warns about the streams left",
    ),
    Intentional(
        "logs",
        r"^only peer: \[DEBUG\] .*Daemon '[^']+' is still exiting\. The next check is in ",
        "when the objects are deleted, the deletion goes on as soon as their daemons exit; "
        "the published framework checks every `cancellation_polling` (60 s by default)",
    ),
    Intentional(
        "logs",
        r"^only ours: \[DEBUG\] .*Daemon '[^']+' has exited gracefully\.",
        "the published framework may abandon a sync daemon at exit although the daemon has seen its stop-flag "
        "(a race with the thread's exit); ours waits for it and reports it as exited",
    ),
    Intentional(
        "logs",
        r"^only peer: \[WARNING\] .*Daemon '[^']+' did not exit in time\. Leaving it orphaned\.",
        "the published framework warns about the daemons that have already exited when the operator exits",
    ),
    Intentional(
        "logs",
        r"^only ours: \[(ERROR|INFO)\] .*(Throttling for \d+ seconds due to an unexpected error|Throttling is over)",
        "after the throttling of an unexpected error of the framework, the failed event is processed again (unless "
        "newer events of the object have come), so that a failed write of the framework is retried; the published "
        "framework waits for the object's next event",
    ),
]


def explain(difference: Difference, intentional: Sequence[Intentional] = ()) -> Difference:
    for known in (*INTENTIONAL, *intentional):
        if known.aspect != difference.aspect:
            continue
        if known.scenario is not None and known.scenario != difference.scenario:
            continue
        if re.search(known.pattern, difference.detail):
            return dataclasses.replace(difference, reason=known.reason)
    return difference


def _calls_by_object(calls: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The calls per object and handler (their relative order across objects & daemons is up to timing)."""
    result: dict[str, list[str]] = {}
    for call in calls:
        key = f"{call.get('obj', '-')} {call.get('fn')}"
        result.setdefault(key, []).append(json.dumps(mask_value(dict(call)), sort_keys=True, default=str))
    return result


def compare(scenario: str, peer: Observation, ours: Observation) -> list[Difference]:
    differences: list[Difference] = []

    def add(aspect: str, detail: str) -> None:
        differences.append(explain(Difference(scenario, aspect, detail)))

    for failure in peer.failures:
        add("steps", f"peer: {failure}")
    for failure in ours.failures:
        add("steps", f"ours: {failure}")

    peer_calls, our_calls = _calls_by_object(peer.calls), _calls_by_object(ours.calls)
    for key in sorted(set(peer_calls) | set(our_calls)):
        if peer_calls.get(key, []) != our_calls.get(key, []):
            add("calls", f"{key}: peer={peer_calls.get(key, [])} ours={our_calls.get(key, [])}")

    for path in sorted(set(peer.objects) | set(ours.objects)):
        peer_obj, our_obj = peer.objects.get(path), ours.objects.get(path)
        if peer_obj == our_obj:
            continue
        if not isinstance(peer_obj, Mapping) or not isinstance(our_obj, Mapping):
            add("objects", f"{path}: peer={peer_obj} ours={our_obj}")
            continue
        for field in sorted(set(peer_obj) | set(our_obj)):
            if peer_obj.get(field) != our_obj.get(field):
                add(
                    "objects",
                    f"{path} {field}: peer={json.dumps(peer_obj.get(field), sort_keys=True)} "
                    f"ours={json.dumps(our_obj.get(field), sort_keys=True)}",
                )

    peer_events = {json.dumps(event, sort_keys=True) for event in peer.events}
    our_events = {json.dumps(event, sort_keys=True) for event in ours.events}
    for event in sorted(peer_events - our_events):
        add("events", f"only peer: {event}")
    for event in sorted(our_events - peer_events):
        add("events", f"only ours: {event}")

    peer_logs, our_logs = compared_logs(peer.logs), compared_logs(ours.logs)
    for level, message in sorted(peer_logs - our_logs):
        add("logs", f"only peer: [{level}] {message}")
    for level, message in sorted(our_logs - peer_logs):
        add("logs", f"only ours: [{level}] {message}")

    if peer.responses != ours.responses:
        add(
            "responses",
            f"peer={json.dumps(peer.responses, sort_keys=True)} ours={json.dumps(ours.responses, sort_keys=True)}",
        )

    if peer.exit_code != ours.exit_code:
        add("exit_code", f"peer={peer.exit_code} ours={ours.exit_code}")
    return differences


# -------------------------------------------------------------------------------------------------
# Both frameworks side by side.
# -------------------------------------------------------------------------------------------------


def our_framework() -> Framework:
    return Framework("ours", pathlib.Path(sys.executable).with_name("kopf"))


def peer_framework() -> Framework:
    from tests.compat import peer

    return Framework("peer", peer.ensure_peer().kopf)


def run_side_by_side(
    scenario: Scenario,
    *,
    workdir: pathlib.Path | None = None,
    peer: Framework | None = None,
    ours: Framework | None = None,
) -> tuple[Observation, Observation, list[Difference]]:
    """Run the scenario under both frameworks at once (each with its own cluster) and compare."""
    peer = peer if peer is not None else peer_framework()
    ours = ours if ours is not None else our_framework()
    base = workdir if workdir is not None else pathlib.Path(tempfile.mkdtemp(prefix=f"kopf-compat-{scenario.name}-"))
    results: dict[str, Observation] = {}
    errors: list[BaseException] = []

    def target(framework: Framework) -> None:
        try:
            results[framework.name] = run_scenario(framework, scenario, base / framework.name)
        except BaseException as e:  # re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=target, args=(framework,)) for framework in (peer, ours)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results["peer"], results["ours"], compare(scenario.name, results["peer"], results["ours"])
