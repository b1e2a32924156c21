"""Real mode: the official client's default configuration follows the run's kubeconfig context during a test."""

from __future__ import annotations

import json
import pathlib

import kubernetes

from kopf_sim.transports.kubeconfig import kubeconfig_dict
from pytest_kopf._clientconfig import RealClientDefaults, refresh_active


def test_the_default_is_the_contexts_while_active_and_restored_after(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            kubeconfig_dict(
                server="https://cluster.example:6443",
                token="t0ken",
                cluster_name="c",
                context_name="ctx",
                user_name="u",
            )
        )
    )
    previous = kubernetes.client.Configuration.get_default_copy().host
    defaults = RealClientDefaults(paths=[str(path)], context="ctx")
    defaults.activate()
    try:
        config = kubernetes.client.Configuration.get_default_copy()
        assert config.host == "https://cluster.example:6443"
        assert "Bearer t0ken" in config.api_key.values()
        refresh_active()  # once set, kept (an operator's later import changes nothing)
        assert kubernetes.client.Configuration.get_default_copy().host == "https://cluster.example:6443"
    finally:
        defaults.deactivate()
    assert kubernetes.client.Configuration.get_default_copy().host == previous


def test_an_unreadable_context_leaves_the_default_alone(tmp_path: pathlib.Path) -> None:
    previous = kubernetes.client.Configuration.get_default_copy().host
    defaults = RealClientDefaults(paths=[str(tmp_path / "missing")], context="nowhere")
    defaults.activate()
    try:
        assert kubernetes.client.Configuration.get_default_copy().host == previous
    finally:
        defaults.deactivate()
