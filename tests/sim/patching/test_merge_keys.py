"""The strategic-merge keys of the built-in kinds."""

import pytest

from kopf_sim.writes.mergekeys import ListStrategy, known_kind_keys, list_strategies, list_strategy

from .helpers import DEPLOYMENT, POD

# ----------------------------------------------------------------------------------------------------


def test_known_kinds_include_the_served_builtins() -> None:
    expected = {
        "v1/Pod",
        "v1/Service",
        "v1/ConfigMap",
        "v1/Secret",
        "v1/Namespace",
        "v1/ServiceAccount",
        "v1/PersistentVolumeClaim",
        "v1/PersistentVolume",
        "v1/Node",
        "apps/v1/Deployment",
        "apps/v1/ReplicaSet",
        "apps/v1/StatefulSet",
        "apps/v1/DaemonSet",
        "batch/v1/Job",
        "coordination.k8s.io/v1/Lease",
    }
    assert expected <= known_kind_keys()


@pytest.mark.parametrize("kind_key", sorted(known_kind_keys()))
def test_metadata_is_common_to_all_kinds(kind_key: str) -> None:
    assert list_strategy(kind_key, ("metadata", "ownerReferences")) == ListStrategy("uid", "merge")
    assert list_strategy(kind_key, ("metadata", "finalizers")) == ListStrategy(None, "merge")


@pytest.mark.parametrize(
    ("kind_key", "path", "expected"),
    [
        (POD, ("spec", "containers"), ListStrategy("name", "merge")),
        (POD, ("spec", "initContainers", "env"), ListStrategy("name", "merge")),
        (POD, ("spec", "ephemeralContainers", "volumeMounts"), ListStrategy("mountPath", "merge")),
        (POD, ("spec", "containers", "ports"), ListStrategy("containerPort", "merge", ("containerPort", "protocol"))),
        (POD, ("spec", "containers", "volumeDevices"), ListStrategy("devicePath", "merge")),
        (POD, ("spec", "volumes"), ListStrategy("name", "merge,retainKeys")),
        (POD, ("spec", "imagePullSecrets"), ListStrategy("name", "merge")),
        (POD, ("spec", "hostAliases"), ListStrategy("ip", "merge")),
        (POD, ("status", "conditions"), ListStrategy("type", "merge")),
        (POD, ("spec", "tolerations"), None),
        ("v1/Service", ("spec", "ports"), ListStrategy("port", "merge", ("port", "protocol"))),
        ("v1/ServiceAccount", ("secrets",), ListStrategy("name", "merge")),
        ("v1/ServiceAccount", ("imagePullSecrets",), None),
        ("v1/ConfigMap", ("data",), None),
        (
            DEPLOYMENT,
            ("spec", "template", "spec", "containers", "ports"),
            ListStrategy("containerPort", "merge", ("containerPort", "protocol")),
        ),
        (DEPLOYMENT, ("spec", "template", "metadata", "finalizers"), ListStrategy(None, "merge")),
        (DEPLOYMENT, ("spec", "strategy"), ListStrategy(None, "retainKeys")),
        (DEPLOYMENT, ("status", "conditions"), ListStrategy("type", "merge")),
        ("apps/v1/StatefulSet", ("spec", "template", "spec", "volumes"), ListStrategy("name", "merge,retainKeys")),
        ("apps/v1/DaemonSet", ("spec", "template", "spec", "containers"), ListStrategy("name", "merge")),
        ("batch/v1/Job", ("spec", "template", "spec", "containers", "env"), ListStrategy("name", "merge")),
        (
            "batch/v1/CronJob",
            ("spec", "jobTemplate", "spec", "template", "spec", "containers"),
            ListStrategy("name", "merge"),
        ),
        ("v1/Node", ("spec", "podCIDRs"), ListStrategy(None, "merge")),
        ("coordination.k8s.io/v1/Lease", ("spec", "holderIdentity"), None),
        (
            "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration",
            ("webhooks",),
            ListStrategy("name", "merge"),
        ),
        ("rbac.authorization.k8s.io/v1/Role", ("rules",), None),
    ],
)
def test_list_strategy_lookup(kind_key: str, path: tuple[str, ...], expected: ListStrategy | None) -> None:
    assert list_strategy(kind_key, path) == expected


def test_every_served_builtin_kind_is_known() -> None:
    builtin_resources = pytest.importorskip("kopf_sim.kube.builtin_resources").builtin_resources
    assert {rtype.kind_key for rtype in builtin_resources()} <= known_kind_keys()


def test_unknown_kinds_have_no_strategies() -> None:
    assert list_strategy("example.com/v1/Thing", ("metadata", "finalizers")) is None
    assert list_strategy(None, ("spec", "containers")) is None
    assert dict(list_strategies("example.com/v1/Thing")) == {}
    assert dict(list_strategies(None)) == {}


def test_list_strategies_table_is_read_only() -> None:
    table = list_strategies(POD)
    assert table[("spec", "containers")].merge_key == "name"
    with pytest.raises(TypeError):
        table[("spec", "x")] = ListStrategy(None, "merge")  # type: ignore[index]


# ----------------------------------------------------------------------------------------------------
