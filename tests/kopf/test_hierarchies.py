import copy
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.current import focused_on, get_current_body
from kopf._kits.hierarchies import (
    adjust_namespace,
    adopt,
    append_owner_reference,
    harmonize_naming,
    label,
    remove_owner_reference,
)

OWNER: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {
        "name": "kopf-example-1",
        "namespace": "default",
        "uid": "6b931859-5d50-4b5c-956b-ea2fed0d1058",
        "labels": {"somelabel": "somevalue"},
    },
}
OWNER_REF = {
    "controller": True,
    "blockOwnerDeletion": True,
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "name": "kopf-example-1",
    "uid": "6b931859-5d50-4b5c-956b-ea2fed0d1058",
}


class FakePykubeObject:
    """Pykube-ng is not installed: its objects are duck-typed by their raw dict in ``.obj``."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj


@pytest.fixture
def owner() -> Iterator[Body]:
    with focused_on(copy.deepcopy(OWNER)) as body:
        yield body


def test_current_body_is_set_only_within_the_block() -> None:
    assert get_current_body() is None
    with focused_on(OWNER) as body:
        assert get_current_body() is body
        assert body.meta.name == "kopf-example-1"
    assert get_current_body() is None


#
# Labels.
#


@pytest.mark.usefixtures("owner")
def test_label_with_explicit_labels() -> None:
    objs = [{"kind": "Job"}, {"kind": "Deployment"}]
    label(objs, {"label1": "value1", "label2": "value2"})
    assert objs == [
        {"kind": "Job", "metadata": {"labels": {"label1": "value1", "label2": "value2"}}},
        {"kind": "Deployment", "metadata": {"labels": {"label1": "value1", "label2": "value2"}}},
    ]


@pytest.mark.usefixtures("owner")
@pytest.mark.parametrize("kwargs", [{}, {"labels": None}])
def test_label_with_the_owners_labels(kwargs: dict[str, Any]) -> None:
    objs = [{"kind": "Job"}, {"kind": "Deployment"}]
    label(objs, **kwargs)
    assert objs == [
        {"kind": "Job", "metadata": {"labels": {"somelabel": "somevalue"}}},
        {"kind": "Deployment", "metadata": {"labels": {"somelabel": "somevalue"}}},
    ]


def test_label_with_empty_labels_adds_none_but_makes_the_field() -> None:
    # As the published framework: the labels' field is there afterwards, for the code that reads it.
    objs: list[dict[str, Any]] = [
        {"kind": "Job", "spec": {"template": {}}},
        {"kind": "Pod", "metadata": {"labels": {"a": "b"}}},
    ]
    label(objs, {}, nested="spec.template")
    assert objs == [
        {"kind": "Job", "metadata": {"labels": {}}, "spec": {"template": {"metadata": {"labels": {}}}}},
        {"kind": "Pod", "metadata": {"labels": {"a": "b"}}},
    ]


def test_adopted_by_an_owner_without_labels_has_the_labels_field() -> None:
    # A working operator writes into the child's labels right after adopting it.
    child: dict[str, Any] = {"kind": "Pod"}
    adopt(child, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1", "uid": "uid-1"}})
    child["metadata"]["labels"]["app"] = "web"
    assert child["metadata"]["labels"] == {"app": "web"}
    assert child["metadata"]["namespace"] is None


def test_label_keeps_existing_labels_unless_forced() -> None:
    obj = {"metadata": {"labels": {"somelabel": "existing"}}}
    label(obj, {"somelabel": "new", "other": "x"})
    assert obj == {"metadata": {"labels": {"somelabel": "existing", "other": "x"}}}
    label(obj, {"somelabel": "new"}, forced=True)
    assert obj == {"metadata": {"labels": {"somelabel": "new", "other": "x"}}}


@pytest.mark.usefixtures("owner")
def test_label_forced_documented_example() -> None:
    objs = [{"kind": "Job"}, {"kind": "Deployment"}]
    label(objs, {"label1": "value1", "somelabel": "not-this"}, forced=True)
    label(objs, forced=True)
    assert objs == [
        {"kind": "Job", "metadata": {"labels": {"label1": "value1", "somelabel": "somevalue"}}},
        {"kind": "Deployment", "metadata": {"labels": {"label1": "value1", "somelabel": "somevalue"}}},
    ]


def test_label_force_is_a_deprecated_alias() -> None:
    obj = {"metadata": {"labels": {"a": "old"}}}
    with pytest.warns(DeprecationWarning, match="forced="):
        label(obj, {"a": "new"}, force=True)
    assert obj == {"metadata": {"labels": {"a": "new"}}}


@pytest.mark.usefixtures("owner")
def test_label_nested_documented_example() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Deployment", "spec": {"template": {}}}]
    label(objs, {"label1": "value1"}, nested="spec.template")
    label(objs, nested="spec.template")
    assert objs == [
        {"kind": "Job", "metadata": {"labels": {"label1": "value1", "somelabel": "somevalue"}}},
        {
            "kind": "Deployment",
            "metadata": {"labels": {"label1": "value1", "somelabel": "somevalue"}},
            "spec": {"template": {"metadata": {"labels": {"label1": "value1", "somelabel": "somevalue"}}}},
        },
    ]


def test_label_nested_as_a_list_of_fields() -> None:
    obj: dict[str, Any] = {"spec": {"jobTemplate": {"spec": {"template": {}}}, "template": {}}}
    label(obj, {"a": "b"}, nested=["spec.template", ("spec", "jobTemplate", "spec", "template")])
    assert obj["spec"]["template"] == {"metadata": {"labels": {"a": "b"}}}
    assert obj["spec"]["jobTemplate"]["spec"]["template"] == {"metadata": {"labels": {"a": "b"}}}


def test_label_a_generator_of_objects() -> None:
    objs = [{"kind": "Job"}, {"kind": "Pod"}]
    label((obj for obj in objs), {"a": "b"})
    assert all(obj["metadata"] == {"labels": {"a": "b"}} for obj in objs)


#
# Owner references.
#


@pytest.mark.usefixtures("owner")
def test_append_owner_reference_of_the_current_object() -> None:
    objs = [{"kind": "Job"}, {"kind": "Deployment"}]
    append_owner_reference(objs)
    assert objs == [
        {"kind": "Job", "metadata": {"ownerReferences": [OWNER_REF]}},
        {"kind": "Deployment", "metadata": {"ownerReferences": [OWNER_REF]}},
    ]


def test_append_owner_reference_is_idempotent_and_keeps_others() -> None:
    other = {"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "other-uid"}
    obj = {"metadata": {"ownerReferences": [other]}}
    append_owner_reference(obj, OWNER)
    append_owner_reference(obj, Body(OWNER))
    assert obj == {"metadata": {"ownerReferences": [other, OWNER_REF]}}


def test_append_owner_reference_flags() -> None:
    obj: dict[str, Any] = {}
    append_owner_reference(obj, OWNER, controller=False, block_owner_deletion=False)
    assert obj["metadata"]["ownerReferences"] == [{**OWNER_REF, "controller": False, "blockOwnerDeletion": False}]


def test_remove_owner_reference() -> None:
    other = {"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "other-uid"}
    obj = {"metadata": {"ownerReferences": [other, dict(OWNER_REF)]}}
    remove_owner_reference(obj, OWNER)
    assert obj == {"metadata": {"ownerReferences": [other]}}
    remove_owner_reference(obj, OWNER)
    assert obj == {"metadata": {"ownerReferences": [other]}}
    untouched: dict[str, Any] = {}
    remove_owner_reference(untouched, OWNER)
    assert untouched == {}


@pytest.mark.usefixtures("owner")
def test_remove_owner_reference_of_the_current_object() -> None:
    obj = {"metadata": {"ownerReferences": [dict(OWNER_REF)]}}
    remove_owner_reference([obj])
    assert obj == {"metadata": {"ownerReferences": []}}


def test_owner_is_required_outside_of_handlers() -> None:
    with pytest.raises(LookupError):
        append_owner_reference({})
    with pytest.raises(LookupError):
        label({})
    with pytest.raises(LookupError):
        adopt({})


#
# Names.
#


def test_harmonize_naming_generates_names_by_default() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Pod", "metadata": {"name": "existing"}}]
    harmonize_naming(objs, "some-name")
    assert objs == [
        {"kind": "Job", "metadata": {"generateName": "some-name-"}},
        {"kind": "Pod", "metadata": {"name": "existing"}},
    ]


def test_harmonize_naming_strictly() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Pod", "metadata": {"generateName": "gen-"}}]
    harmonize_naming(objs, "some-name", strict=True)
    assert objs == [
        {"kind": "Job", "metadata": {"name": "some-name"}},
        {"kind": "Pod", "metadata": {"generateName": "gen-"}},
    ]


def test_harmonize_naming_forced() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "existing"}}
    harmonize_naming(obj, "some-name", forced=True)
    assert obj == {"metadata": {"generateName": "some-name-"}}
    harmonize_naming(obj, "some-name", forced=True, strict=True)
    assert obj == {"metadata": {"name": "some-name"}}


@pytest.mark.usefixtures("owner")
def test_harmonize_naming_after_the_current_object() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Deployment"}]
    harmonize_naming(objs, forced=True, strict=True)
    assert objs == [
        {"kind": "Job", "metadata": {"name": "kopf-example-1"}},
        {"kind": "Deployment", "metadata": {"name": "kopf-example-1"}},
    ]
    objs = [{"kind": "Job"}, {"kind": "Deployment"}]
    harmonize_naming(objs)
    assert objs == [
        {"kind": "Job", "metadata": {"generateName": "kopf-example-1-"}},
        {"kind": "Deployment", "metadata": {"generateName": "kopf-example-1-"}},
    ]


#
# Namespaces.
#


def test_adjust_namespace_explicitly() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Pod", "metadata": {"namespace": "other"}}]
    adjust_namespace(objs, "ns1")
    assert objs == [
        {"kind": "Job", "metadata": {"namespace": "ns1"}},
        {"kind": "Pod", "metadata": {"namespace": "other"}},
    ]
    adjust_namespace(objs, "ns1", forced=True)
    assert [obj["metadata"]["namespace"] for obj in objs] == ["ns1", "ns1"]


@pytest.mark.usefixtures("owner")
def test_adjust_namespace_to_the_current_object() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Deployment"}]
    adjust_namespace(objs, forced=True)
    assert objs == [
        {"kind": "Job", "metadata": {"namespace": "default"}},
        {"kind": "Deployment", "metadata": {"namespace": "default"}},
    ]


def test_adjust_namespace_to_a_cluster_scoped_owner_puts_no_namespace() -> None:
    # As the published framework: the field is there, as None (no namespace); forced, it replaces one.
    objs: list[dict[str, Any]] = [{}, {"metadata": {"namespace": "ns1"}}]
    with focused_on({"metadata": {"name": "node1"}}):
        adjust_namespace(objs)
    assert objs == [{"metadata": {"namespace": None}}, {"metadata": {"namespace": "ns1"}}]
    with focused_on({"metadata": {"name": "node1"}}):
        adjust_namespace(objs, forced=True)
    assert objs == [{"metadata": {"namespace": None}}, {"metadata": {"namespace": None}}]


def test_adjust_namespace_keeps_an_empty_namespace_unless_forced() -> None:
    obj: dict[str, Any] = {"metadata": {"namespace": ""}}
    adjust_namespace(obj, "ns1")
    assert obj == {"metadata": {"namespace": ""}}
    adjust_namespace(obj, "ns1", forced=True)
    assert obj == {"metadata": {"namespace": "ns1"}}


#
# Adopting.
#


@pytest.mark.usefixtures("owner")
def test_adopt_documented_example() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Deployment"}]
    adopt(objs, strict=True, forced=True, nested="spec.template")
    expected_meta = {
        "ownerReferences": [OWNER_REF],
        "name": "kopf-example-1",
        "namespace": "default",
        "labels": {"somelabel": "somevalue"},
    }
    assert objs == [{"kind": "Job", "metadata": expected_meta}, {"kind": "Deployment", "metadata": expected_meta}]
    assert list(objs[0]["metadata"]) == ["ownerReferences", "name", "namespace", "labels"]


def test_adopt_with_an_explicit_owner_and_defaults() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Pod", "metadata": {"namespace": "other", "labels": {"a": "b"}}}]
    adopt((obj for obj in objs), OWNER)
    assert objs == [
        {
            "kind": "Pod",
            "metadata": {
                "namespace": "other",
                "labels": {"a": "b", "somelabel": "somevalue"},
                "ownerReferences": [OWNER_REF],
                "generateName": "kopf-example-1-",
            },
        }
    ]


def test_unsupported_objects_are_rejected() -> None:
    with pytest.raises(TypeError):
        label([123], {"a": "b"})
    with pytest.raises(TypeError):
        adopt({}, owner=123)


#
# 3rd-party objects: the official client's models & pykube-ng objects.
#


@pytest.mark.usefixtures("owner")
def test_adopt_kubernetes_pod() -> None:
    pod = kubernetes.client.V1Pod()
    adopt(pod)
    assert isinstance(pod.metadata, kubernetes.client.V1ObjectMeta)
    assert pod.metadata.generate_name == "kopf-example-1-"
    assert pod.metadata.name is None
    assert pod.metadata.namespace == "default"
    assert pod.metadata.labels == {"somelabel": "somevalue"}
    assert len(pod.metadata.owner_references) == 1
    ref = pod.metadata.owner_references[0]
    assert isinstance(ref, kubernetes.client.V1OwnerReference)
    assert ref.to_dict() == {
        "api_version": "kopf.dev/v1",
        "block_owner_deletion": True,
        "controller": True,
        "kind": "KopfExample",
        "name": "kopf-example-1",
        "uid": "6b931859-5d50-4b5c-956b-ea2fed0d1058",
    }
    assert pod.spec is None
    assert pod.status is None


def test_kubernetes_models_keep_existing_values_unless_forced() -> None:
    pod = kubernetes.client.V1Pod(
        metadata=kubernetes.client.V1ObjectMeta(name="mine", namespace="mine", labels={"somelabel": "mine"})
    )
    adopt(pod, OWNER)
    assert (pod.metadata.name, pod.metadata.generate_name, pod.metadata.namespace) == ("mine", None, "mine")
    assert pod.metadata.labels == {"somelabel": "mine"}
    adopt(pod, OWNER, forced=True, strict=True)
    assert (pod.metadata.name, pod.metadata.namespace) == ("kopf-example-1", "default")
    assert pod.metadata.labels == {"somelabel": "somevalue"}
    assert len(pod.metadata.owner_references) == 1
    remove_owner_reference(pod, OWNER)
    assert pod.metadata.owner_references == []


def test_kubernetes_models_nested_labels() -> None:
    deployment = kubernetes.client.V1Deployment(
        spec=kubernetes.client.V1DeploymentSpec(
            selector=kubernetes.client.V1LabelSelector(), template=kubernetes.client.V1PodTemplateSpec()
        )
    )
    job = kubernetes.client.V1Job()
    label([deployment, job], {"a": "b"}, nested="spec.template")
    assert deployment.metadata.labels == {"a": "b"}
    assert deployment.spec.template.metadata.labels == {"a": "b"}
    assert job.metadata.labels == {"a": "b"}
    assert job.spec is None


def test_kubernetes_models_as_owners() -> None:
    owner = kubernetes.client.V1Pod(
        api_version="v1",
        kind="Pod",
        metadata=kubernetes.client.V1ObjectMeta(name="pod1", namespace="ns1", uid="uid1", labels={"app": "x"}),
    )
    obj: dict[str, Any] = {}
    adopt(obj, owner, strict=True)
    assert obj == {
        "metadata": {
            "ownerReferences": [
                {
                    "controller": True,
                    "blockOwnerDeletion": True,
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "pod1",
                    "uid": "uid1",
                }
            ],
            "name": "pod1",
            "namespace": "ns1",
            "labels": {"app": "x"},
        }
    }


def test_pykube_like_objects() -> None:
    pod = FakePykubeObject({"kind": "Pod", "spec": {"template": {}}})
    adopt(pod, OWNER, nested="spec.template")
    assert pod.obj == {
        "kind": "Pod",
        "spec": {"template": {"metadata": {"labels": {"somelabel": "somevalue"}}}},
        "metadata": {
            "ownerReferences": [OWNER_REF],
            "generateName": "kopf-example-1-",
            "namespace": "default",
            "labels": {"somelabel": "somevalue"},
        },
    }
    remove_owner_reference(pod, OWNER)
    assert pod.obj["metadata"]["ownerReferences"] == []


def test_pykube_like_objects_as_owners() -> None:
    obj: dict[str, Any] = {}
    append_owner_reference(obj, FakePykubeObject(copy.deepcopy(OWNER)))
    assert obj == {"metadata": {"ownerReferences": [OWNER_REF]}}
