"""The official clients in the checks' worlds: handlers reach the world's own cluster, as under ``kopf_cluster``.

A world of the checks is a cluster and an operator of its own, and the checks that compare the end state run a
second world (the baseline) at the same time. The handlers that configure the official client the documented
ways (``load_kube_config()``, or none: the default configuration) must reach the cluster of their own world,
whichever world was set up last; and nothing of the worlds' configuration is left in the process after them.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import kubernetes
import pytest

from pytest_kopf.checks import check_operator
from pytest_kopf.errors import OperatorCheckFailed

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"

#: A child ConfigMap with a fixed name, made or updated through the official client (idempotent).
OPERATOR = """
    import kopf
    import kubernetes


    def client():
        {configure}
        return kubernetes.client.CoreV1Api()


    @kopf.on.create("gadgets")
    @kopf.on.update("gadgets")
    def ensure_child(name, namespace, spec, body, **_):
        child = {{"metadata": {{"name": f"{{name}}-data"}}, "data": {{"size": str(spec.get("size", 0))}}}}
        kopf.append_owner_reference(child, owner=body)
        core = client()
        try:
            core.create_namespaced_config_map(namespace, child)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:
                raise
            core.patch_namespaced_config_map(f"{{name}}-data", namespace, {{"data": child["data"]}})
        return "ensured"
"""


def write_operator(tmp_path: Path, configure: str) -> Path:
    path = tmp_path / "operator.py"
    path.write_text(textwrap.dedent(OPERATOR.format(configure=configure)))
    return path


@pytest.mark.parametrize(
    "configure",
    [
        pytest.param("kubernetes.config.load_kube_config()", id="kubeconfig"),
        pytest.param("pass", id="default-configuration"),
    ],
)
def test_handlers_with_the_official_client_reach_their_own_world(tmp_path: Path, configure: str) -> None:
    kubeconfig_before = os.environ.get("KUBECONFIG")
    default_before = kubernetes.client.Configuration.get_default_copy().host
    report = check_operator(
        paths=[write_operator(tmp_path, configure)],
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["convergence", "crash-restart", "idempotence"],  # two worlds at once in the comparing ones
        max_examples=4,
        max_steps=5,
        names=["obj-0"],
        settle_timeout=300,
    )
    assert report.examples >= 4 and report.plans["crash-restart"].run >= 4  # the planned runs: more worlds
    assert os.environ.get("KUBECONFIG") == kubeconfig_before
    assert kubernetes.client.Configuration.get_default_copy().host == default_before


def test_a_check_still_finds_a_bug_of_a_handler_with_the_official_client(tmp_path: Path) -> None:
    path = tmp_path / "operator.py"
    path.write_text(
        textwrap.dedent(
            """
            import kopf
            import kubernetes


            @kopf.on.create("gadgets")
            def make_child(name, namespace, body, **_):
                child = {"metadata": {"generateName": f"{name}-"}, "data": {}}  # a new one on every call
                kopf.append_owner_reference(child, owner=body)
                kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, child)
            """
        )
    )
    with pytest.raises(OperatorCheckFailed) as info:
        check_operator(
            paths=[path],
            manifests=[CRD],
            resources=[RESOURCE],
            checks=["crash-restart"],
            max_examples=100,
            max_steps=8,
            names=["obj-0"],
            settle_timeout=300,
        )
    assert info.value.check == "crash-restart"
    assert "ConfigMap" in str(info.value)
