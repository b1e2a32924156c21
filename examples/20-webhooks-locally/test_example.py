"""Webhooks developed locally: field-level denials, defaults from the environment, the composite's reuse.

Through the fixtures (the simulated cluster in-process in sim mode; the operator's own HTTPS webhook server with
--kopf-real), and as the README runs it: ``kopf-sim serve --tls``, ``kopf run`` with kopf's webhook server and a
self-signed certificate, kubectl and the official client, all real processes on 127.0.0.1.
"""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import kubernetes
import pytest

import kopf
from pytest_kopf.errors import KopfApiError

HERE = Path(__file__).parent
CRD = HERE / "crd.yaml"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
CONFIGURATION = "databases.demo.kopf.dev"


def load_example():
    """The operator's module, for its plain functions (its handlers go to a registry of its own, unused)."""
    spec = importlib.util.spec_from_file_location("webhooks_locally_example", HERE / "example.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    previous = kopf.get_default_registry()
    kopf.set_default_registry(kopf.OperatorRegistry())
    try:
        spec.loader.exec_module(module)
    finally:
        kopf.set_default_registry(previous)
    return module


# The operator's validators are plain functions: they are tested here without any cluster, too.
example = load_example()


def database(name: str, **spec) -> dict:
    return {"apiVersion": "demo.kopf.dev/v1", "kind": "Database", "metadata": {"name": name}, "spec": spec}


def platform(name: str, **spec) -> dict:
    return {"apiVersion": "demo.kopf.dev/v1", "kind": "Platform", "metadata": {"name": name}, "spec": spec}


def has_webhooks(config: dict | None) -> bool:
    return bool(config and config.get("webhooks"))


async def start(kopf_cluster, kopf_operator) -> None:
    """Start the operator and wait until the apiserver knows its webhooks (they are registered at startup)."""
    await kopf_cluster.apply(CRD)
    await kopf_operator.start(paths=[HERE / "example.py"], namespaces=[kopf_cluster.namespace])
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        await kopf_cluster.wait_for(kind, CONFIGURATION, condition=has_webhooks, timeout=30)


def causes(error: KopfApiError) -> list[tuple[str, str]]:
    return [(cause["field"], cause["message"]) for cause in error.details["causes"]]


# -- Through the fixtures (both modes) ---------------------------------------------------------------------


async def test_every_bad_field_is_denied_at_once_with_its_path(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)

    bad = database("invoices", databaseName="x" * 40, replicas=12, storage={"size": "ten"})
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create(bad)
    assert err.value.code == 422 and err.value.reason == "Invalid"
    assert causes(err.value) == [
        ("spec.databaseName", f'Invalid value: "{"x" * 40}": should be shorter than 36 characters'),
        ("spec.replicas", "Invalid value: 12: must be between 1 and 9"),
        ("spec.storage.size", 'Invalid value: "ten": must be a whole number of gibibytes, e.g. 10Gi'),
    ]
    assert await kopf_cluster.get("databases.demo.kopf.dev", "invoices") is None

    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_updates_are_checked_against_the_old_spec(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    await kopf_cluster.create(database("orders", storage={"size": "10Gi", "class": "fast"}))

    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.patch(
            "databases.demo.kopf.dev", "orders", {"spec": {"storage": {"size": "5Gi", "class": "slow"}}}
        )
    assert causes(err.value) == [
        ("spec.storage.class", 'Invalid value: "slow": field is immutable'),
        ("spec.storage.size", "Forbidden: may not shrink from 10Gi"),
    ]
    grown = await kopf_cluster.patch("databases.demo.kopf.dev", "orders", {"spec": {"storage": {"size": "20Gi"}}})
    assert grown["spec"]["storage"] == {"size": "20Gi", "class": "fast"}

    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_protected_databases_are_not_deleted(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)
    await kopf_cluster.create(database("orders", protected=True, storage={"size": "10Gi"}))

    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.delete("databases.demo.kopf.dev", "orders")
    assert causes(err.value) == [("spec.protected", "Forbidden: unprotect the database before deleting it")]
    await kopf_cluster.patch("databases.demo.kopf.dev", "orders", {"spec": {"protected": False}})
    await kopf_cluster.delete("databases.demo.kopf.dev", "orders")
    await kopf_cluster.wait_gone("databases.demo.kopf.dev", "orders", timeout=30)

    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_defaults_come_from_the_environment_at_start_up(kopf_cluster, kopf_operator, monkeypatch):
    monkeypatch.setenv(example.IMAGE_DEFAULT, "registry.local/postgres:16")
    monkeypatch.setenv(example.STORAGE_CLASS_DEFAULT, "local-ssd")
    await start(kopf_cluster, kopf_operator)
    first = await kopf_cluster.create(database("first", storage={"size": "1Gi"}))
    assert first["spec"] == {
        "image": "registry.local/postgres:16",
        "replicas": 1,
        "storage": {"size": "1Gi", "class": "local-ssd"},
    }
    kept = await kopf_cluster.create(database("kept", image="mine:1", replicas=3, storage={"size": "1Gi"}))
    assert kept["spec"]["image"] == "mine:1" and kept["spec"]["replicas"] == 3
    await kopf_operator.stop()

    # Another environment, the same code: other defaults.
    monkeypatch.setenv(example.IMAGE_DEFAULT, "mirror.local/postgres:17")
    monkeypatch.setenv(example.REPLICAS_DEFAULT, "2")
    await start(kopf_cluster, kopf_operator)
    second = await kopf_cluster.create(database("second", storage={"size": "1Gi"}))
    assert second["spec"]["image"] == "mirror.local/postgres:17" and second["spec"]["replicas"] == 2

    await kopf_operator.stop()
    assert kopf_operator.exception is None


async def test_the_platform_reuses_the_database_rules_at_its_path(kopf_cluster, kopf_operator):
    await start(kopf_cluster, kopf_operator)

    bad = platform("shop", database={"enabled": True, "template": {"replicas": 0}})
    with pytest.raises(KopfApiError) as err:
        await kopf_cluster.create(bad)
    assert causes(err.value) == [
        ("spec.database.template.replicas", "Invalid value: 0: must be between 1 and 9"),
        ("spec.database.template.storage.size", "Required value: the size of the database's volume, e.g. 10Gi"),
    ]
    good = platform("shop", database={"enabled": True, "template": {"storage": {"size": "5Gi"}}})
    created = await kopf_cluster.create(good)
    assert created["spec"]["database"]["template"] == {
        "image": "postgres:16",
        "replicas": 1,
        "storage": {"size": "5Gi", "class": "standard"},
    }
    disabled = await kopf_cluster.create(platform("lean", database={"enabled": False, "template": {"replicas": 0}}))
    assert disabled["spec"]["database"]["template"] == {"replicas": 0}  # not a database: neither checked nor defaulted

    await kopf_operator.stop()
    assert kopf_operator.exception is None


# -- The validators alone ------------------------------------------------------------------------------------


def test_the_validators_report_at_the_path_they_are_given():
    spec = {"replicas": 10, "storage": {"size": "1Gi"}}
    assert example.validate_database_create(spec, example.FieldPath("spec")) == [
        ("spec.replicas", "Invalid value: 10: must be between 1 and 9"),
    ]
    nested = example.FieldPath("spec").child("services").index(2).child("template")
    assert example.validate_database_create(spec, nested) == [
        ("spec.services[2].template.replicas", "Invalid value: 10: must be between 1 and 9"),
    ]


def test_the_defaults_read_the_environment():
    assert example.Defaults.from_environment({}) == example.Defaults()
    environ = {example.IMAGE_DEFAULT: "i:1", example.REPLICAS_DEFAULT: "3", example.STORAGE_CLASS_DEFAULT: "c"}
    assert example.Defaults.from_environment(environ) == example.Defaults("i:1", 3, "c")
    assert example.Defaults.from_environment({example.REPLICAS_DEFAULT: "many"}).replicas == 1


# -- As the README runs it: kopf-sim serve --tls, kopf run, kubectl, the official client -------------------


@pytest.mark.kopf_real_time  # real processes, with their real clocks
def test_locally_with_kopf_sim_serve_kubectl_and_the_official_client(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    server_log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "kopf_sim", "serve", "--tls", "--token", "auto", "--port", "0",
         "--kubeconfig", str(kubeconfig), "--load", str(CRD)],
        stdout=server_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    operator: subprocess.Popen[bytes] | None = None
    try:
        _wait(lambda: kubeconfig.exists() and kubeconfig.stat().st_size > 0, "kopf-sim serve to start", server)
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), example.IMAGE_DEFAULT: "registry.local/postgres:16"}
        operator_log = (tmp_path / "operator.log").open("wb")
        operator = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", str(HERE / "example.py")],
            env=env, stdout=operator_log, stderr=subprocess.STDOUT,
        )  # fmt: skip

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            command = [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", *args]
            return subprocess.run(command, capture_output=True, text=True, timeout=60)

        def registered() -> bool:
            return kubectl("get", "validatingwebhookconfiguration", CONFIGURATION).returncode == 0

        _wait(registered, "the operator to register its webhooks", operator)

        # kubectl: the bulleted list of every field at fault.
        result = kubectl("apply", "-f", str(HERE / "invalid.yaml"))
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            'The Database "invoices" is invalid: ',
            '* spec.databaseName: Invalid value: "invoices-of-all-the-customers-since-the-beginning": '
            "should be shorter than 36 characters",
            "* spec.replicas: Invalid value: 12: must be between 1 and 9",
            '* spec.storage.size: Invalid value: "ten": must be a whole number of gibibytes, e.g. 10Gi',
        ]

        # The official client: a 422 Invalid with the three causes in the exception's body.
        bad = database("invoices", databaseName="x" * 40, replicas=0, storage={"size": "ten"})
        api = kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))
        with pytest.raises(kubernetes.client.ApiException) as err:
            api.create_namespaced_custom_object("demo.kopf.dev", "v1", "default", "databases", bad)
        body = json.loads(err.value.body)
        assert err.value.status == 422 and body["reason"] == "Invalid"
        assert [cause["field"] for cause in body["details"]["causes"]] == [
            "spec.databaseName",
            "spec.replicas",
            "spec.storage.size",
        ]
        assert {cause["reason"] for cause in body["details"]["causes"]} == {"FieldValueInvalid"}

        # A valid one: defaulted from the operator's environment.
        result = kubectl("apply", "-f", str(HERE / "objects.yaml"))
        assert result.returncode == 0, result.stderr
        image = kubectl("get", "database", "orders", "-o", "jsonpath={.spec.image}").stdout
        assert image == "registry.local/postgres:16"
    finally:
        for process in (operator, server):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
    assert operator is not None and operator.returncode == 0, (tmp_path / "operator.log").read_text()


def _wait(condition, what: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"The process has exited while waiting for {what}."
        assert time.monotonic() < deadline, f"Timed out waiting for {what}."
        time.sleep(0.1)
