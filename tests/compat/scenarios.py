"""
The scenarios of the differential harness: which operator, which actions, what to wait for.

Every wait names what it waits for; the actions are HTTP requests to the served cluster.
Each scenario is short (seconds) and its outcome must not depend on timing beyond what it waits for.
"""

from __future__ import annotations

import datetime
import pathlib
import socket
from collections.abc import Mapping
from typing import Any

from tests.compat import harness
from tests.compat.harness import Context, Pause, Scenario, Start, Stop, Wait, kex_path


def kex(
    name: str,
    spec: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata, "spec": dict(spec or {})}


def create(body: Mapping[str, Any], path: str | None = None) -> Any:
    def step(ctx: Context) -> None:
        status, answer = ctx.cluster.request(
            "POST", path or kex_path(body["metadata"].get("namespace", "default")), body
        )
        assert status in (200, 201), answer

    return step


def admit(body: Mapping[str, Any]) -> Any:
    """Create the object and keep what the admission made of it: the status code, the message, the result."""

    def step(ctx: Context) -> Any:
        status, answer = ctx.cluster.request("POST", kex_path(body["metadata"].get("namespace", "default")), body)
        if not isinstance(answer, dict):
            return {"code": status, "answer": answer}
        return {
            "code": status,
            "message": answer.get("message"),
            "labels": answer.get("metadata", {}).get("labels"),
            "spec": answer.get("spec"),
        }

    return step


def patch(name: str, body: Mapping[str, Any], namespace: str = "default", path: str | None = None) -> Any:
    def step(ctx: Context) -> None:
        status, answer = ctx.cluster.request(
            "PATCH", path or kex_path(namespace, name), body, content_type="application/merge-patch+json"
        )
        assert status == 200, answer

    return step


def delete(name: str, namespace: str = "default") -> Any:
    def step(ctx: Context) -> None:
        ctx.cluster.request("DELETE", kex_path(namespace, name))

    return step


def gone(name: str, namespace: str = "default") -> Wait:
    return Wait(lambda ctx: ctx.cluster.get(kex_path(namespace, name)) is None, f"{name} is gone")


def called(fn: str, count: int = 1, **match: Any) -> Wait:
    return Wait(lambda ctx: ctx.called(fn, count, **match), f"{fn} called {count}x with {match}")


def has_status(name: str, key: str, namespace: str = "default") -> Wait:
    def condition(ctx: Context) -> bool:
        body = ctx.cluster.get(kex_path(namespace, name)) or {}
        return key in (body.get("status") or {})

    return Wait(condition, f"{name} has status.{key}")


def logged(text: str) -> Wait:
    def condition(ctx: Context) -> bool:
        return ctx.run is not None and text in ctx.run.log_path.read_text(errors="replace")

    return Wait(condition, f"logged {text!r}")


SCENARIOS: list[Scenario] = [
    Scenario(
        name="handlers",
        operator="op_handlers.py",
        steps=[
            create(kex("pre", {"field": "existing"})),
            Start(),
            has_status("pre", "create_fn"),
            create(kex("h1", {"field": "one"})),
            has_status("h1", "create_fn"),
            called("update_fn", obj="h1"),  # the label added by create_fn is a change too
            patch("h1", {"spec": {"field": "two"}}),
            called("update_fn", obj="h1", new={"field": "two"}),
            patch("h1", {"status": {"unrelated": "x"}}),
            logged("[default/h1] Something has changed, but we are not interested"),
            delete("h1"),
            gone("h1"),
            Stop(),
        ],
        objects=[kex_path("default", "pre"), kex_path("default", "h1")],
    ),
]

SCENARIOS += [
    Scenario(
        name="restarts",
        operator="op_handlers.py",
        steps=[
            Start(),
            create(kex("r1", {"field": "one"})),
            create(kex("r2", {"field": "one"})),
            has_status("r1", "create_fn"),
            has_status("r2", "create_fn"),
            logged("[default/r1] Something has changed"),
            logged("[default/r2] Something has changed"),
            Stop(),
            patch("r1", {"spec": {"field": "changed-while-down"}}),
            delete("r2"),
            Start(),
            has_status("r1", "update_fn"),
            gone("r2"),
            Stop(),
        ],
        objects=[kex_path("default", "r1"), kex_path("default", "r2")],
    ),
]

SCENARIOS += [
    Scenario(
        name="resuming",
        operator="op_resume.py",
        steps=[
            Start(),
            create(kex("mid1")),
            called("second", obj="mid1", retry=0),
            Stop(),
            Start(),
            has_status("mid1", "second"),
            logged("Creation is processed"),
            Stop(),
            Start(),
            called("resumed", obj="mid1"),
            called("create_or_resume", 2, obj="mid1"),
            Stop(),
        ],
        objects=[kex_path("default", "mid1")],
    ),
]


def _events_count(count: int) -> Wait:
    def condition(ctx: Context) -> bool:
        return len((ctx.cluster.get("/api/v1/namespaces/default/events") or {}).get("items", [])) >= count

    return Wait(condition, f"{count} events posted", timeout=10)


for _suffix, _env, _count in [
    ("", {}, 4),
    ("-loggers", {"COMPAT_POSTING_LOGGERS": "1"}, 4),
    ("-warnings", {"COMPAT_POSTING_LOGGERS": "1", "COMPAT_POSTING_LEVEL": "30"}, 4),
    ("-disabled", {"COMPAT_POSTING_LOGGERS": "1", "COMPAT_POSTING_DISABLED": "1"}, 0),
]:
    SCENARIOS.append(
        Scenario(
            name=f"events{_suffix}",
            operator="op_events.py",
            env=_env,
            steps=[
                Start(),
                create(kex("e1")),
                has_status("e1", "create_fn"),
                _events_count(_count),
                Pause(1.5),
                Stop(),
            ],
            objects=[kex_path("default", "e1")],
        )
    )

SCENARIOS += [
    Scenario(
        name="errors",
        operator="op_errors.py",
        steps=[
            Start(),
            create(kex("err1")),
            called("temporary", obj="err1", retry=2),
            called("arbitrary", obj="err1", retry=1),
            called("timing-out", obj="err1", retry=1),
            called("temporary-retries", obj="err1", retry=1),
            called("arbitrary-timeout", obj="err1", retry=1),
            logged("Creation is processed"),
            patch("err1", {"spec": {"field": "changed"}}),
            has_status("err1", "default-backoff"),
            Stop(),
        ],
        objects=[kex_path("default", "err1")],
    ),
]

SCENARIOS += [
    Scenario(
        name="daemons",
        operator="op_daemons.py",
        steps=[
            Start(),
            create(kex("d1")),
            called("async_daemon", obj="d1", event="started"),
            called("sync_daemon", obj="d1", event="started"),
            called("finite", obj="d1"),
            called("failing", obj="d1", retry=1),
            delete("d1"),
            gone("d1"),
            called("async_daemon", obj="d1", event="stopped"),
            called("sync_daemon", obj="d1", event="stopped"),
            create(kex("d2")),
            called("async_daemon", obj="d2", event="started"),
            called("sync_daemon", obj="d2", event="started"),
            called("finite", obj="d2"),
            called("failing", obj="d2", retry=1),
            Pause(0.5),
            Stop(),
        ],
        objects=[kex_path("default", "d1"), kex_path("default", "d2")],
    ),
    Scenario(
        name="timers",
        operator="op_timers.py",
        steps=[
            Start(),
            create(kex("t1", {"field": "a"})),
            called("ticker", obj="t1", tick=3),
            called("delayed", obj="t1"),
            called("failing-timer", obj="t1", count=2),
            called("idle", obj="t1", field="a"),
            patch("t1", {"spec": {"field": "b"}}),
            called("idle", obj="t1", field="b"),
            has_status("t1", "ticker"),
            Stop(),
        ],
        objects=[kex_path("default", "t1")],
    ),
    Scenario(
        name="indexing",
        operator="op_indexing.py",
        steps=[
            create(kex("i1", {"field": "x"})),
            create(kex("i2", {"field": "x"}, labels={"indexed": "no"})),
            create(kex("i3", {"field": "y"})),
            Start(),
            create(kex("checker", {"field": "z"}, labels={"role": "checker"})),
            called("check", obj="checker"),
            delete("i1"),
            gone("i1"),
            patch("i3", {"spec": {"field": "x"}}),
            Pause(1.0),
            patch("checker", {"spec": {"field": "zz"}}),
            called("check", 2, obj="checker"),
            Stop(),
        ],
    ),
    Scenario(
        name="filters",
        operator="op_filters.py",
        steps=[
            Start(),
            create(kex("f1", {"field": "special", "size": 3}, labels={"match": "yes"})),
            create(kex("f2", {"field": "plain", "size": 1}, labels={"match": "yellow"}, annotations={"skip": "x"})),
            create(kex("f3", {"size": 2})),
            called("field_fn", obj="f1"),
            called("field_fn", obj="f2"),
            has_status("f1", "field_fn/spec.field"),
            has_status("f2", "field_fn/spec.field"),
            called("event_fn", obj="f1"),
            patch("f1", {"spec": {"field": "changed"}}),
            called("field_fn", 2, obj="f1"),
            patch("f3", {"spec": {"size": 5}}),
            called("size_from_two", obj="f3"),
            patch("f3", {"spec": {"size": 6}}),
            logged("[default/f3] Handling cycle is finished"),
            create(kex("f-boom")),
            logged("[default/f-boom] Throttling is over"),
            Pause(1.0),
            Stop(),
        ],
        objects=[kex_path("default", "f1"), kex_path("default", "f2"), kex_path("default", "f3")],
    ),
    Scenario(
        name="subhandlers",
        operator="op_subhandlers.py",
        steps=[
            Start(),
            create(kex("s1", {"items": ["a", "b"]})),
            called("decorated", obj="s1", retry=1),
            logged("[default/s1] Creation is processed"),
            Stop(),
        ],
        objects=[kex_path("default", "s1")],
    ),
    Scenario(
        name="activities",
        operator="op_activities.py",
        steps=[
            Start(),
            called("startup_fn"),
            create(kex("a1")),
            called("create_fn", obj="a1", retry=1),
            has_status("a1", "create_fn"),
            logged("[default/a1] Something has changed"),
            delete("a1"),
            gone("a1"),
            Stop(),
        ],
        objects=[kex_path("default", "a1")],
    ),
    Scenario(
        name="exit-codes",
        operator="op_activities.py",
        env={"COMPAT_FAILING_STARTUP": "1"},
        steps=[
            Start(),
            called("failing-startup"),
            Wait(
                lambda ctx: ctx.run is not None and ctx.run.process.poll() is not None, "the operator exits", timeout=10
            ),
        ],
    ),
]


def _webhook_setup(workdir: pathlib.Path) -> dict[str, str]:
    """A certificate for 127.0.0.1 (both frameworks are given one: no generation of their own) and a free port."""
    from kopf._cogs.helpers.certificates import build_self_signed

    cert, key = build_self_signed(["127.0.0.1"], now=datetime.datetime.now(datetime.UTC))
    (workdir / "webhook.crt").write_bytes(cert)
    (workdir / "webhook.key").write_bytes(key)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return {
        "COMPAT_WEBHOOK_PORT": str(port),
        "COMPAT_WEBHOOK_CERT": str(workdir / "webhook.crt"),
        "COMPAT_WEBHOOK_KEY": str(workdir / "webhook.key"),
    }


def _webhooks_registered(ctx: Context) -> bool:
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/compat.kopf.dev"
    mutating = path.replace("validating", "mutating")
    return bool(ctx.cluster.get(path)) and bool(ctx.cluster.get(mutating))


SCENARIOS += [
    Scenario(
        name="admission",
        operator="op_admission.py",
        setup=_webhook_setup,
        steps=[
            Start(),
            Wait(_webhooks_registered, "the webhook configurations are registered"),
            logged("Activity 'configure' succeeded"),
            Pause(1.0),  # the server is listening shortly after the registration
            admit(kex("w1", {"field": "fine"})),
            admit(kex("w2", {"field": "forbidden"})),
            Stop(),
        ],
        objects=[kex_path("default", "w1"), kex_path("default", "w2")],
    ),
    Scenario(
        name="peering",
        operator="op_peering.py",
        args=("--all-namespaces",),
        manifests=(harness.CRD, harness.PEERING_CRDS),
        steps=[
            create(
                {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "compat"}},
                path="/apis/kopf.dev/v1/clusterkopfpeerings",
            ),
            Start(),
            create(kex("p1")),
            called("create_fn", obj="p1"),
            patch(
                "compat",
                {
                    "status": {
                        "fake-peer": {
                            "priority": 100,
                            "lifetime": 600,
                            "lastseen": datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds"),
                        }
                    }
                },
                path="/apis/kopf.dev/v1/clusterkopfpeerings/compat",
            ),
            logged("Pausing"),
            create(kex("p2")),
            Pause(1.0),
            patch("compat", {"status": {"fake-peer": None}}, path="/apis/kopf.dev/v1/clusterkopfpeerings/compat"),
            logged("Resuming"),
            called("create_fn", obj="p2"),
            Stop(),
        ],
        objects=[kex_path("default", "p1"), kex_path("default", "p2")],
    ),
]

SCENARIOS += [
    Scenario(
        name="kwargs",
        operator="op_kwargs.py",
        steps=[
            Start(),
            create(kex("k1", {"field": "a"}, labels={"l": "v"}, annotations={"note": "x"})),
            called("create", obj="k1"),
            called("field", obj="k1"),
            called("daemon", obj="k1"),
            called("timer", obj="k1"),
            logged("[default/k1] Something has changed"),
            patch("k1", {"spec": {"field": "b"}}),
            called("update", obj="k1"),
            called("field", 2, obj="k1"),
            delete("k1"),
            gone("k1"),
            Stop(),
        ],
    ),
]

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
