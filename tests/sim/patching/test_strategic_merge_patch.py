"""Strategic merge patches: by merge keys, directives, retained orders."""

import copy
from typing import Any

import pytest

from kopf_sim.writes.patching import (
    PatchError,
    apply_strategic_merge_patch,
)

from .helpers import DEPLOYMENT, POD

# ----------------------------------------------------------------------------------------------------


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_smp_maps_merge_and_null_deletes() -> None:
    target = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"x": 1}}
    patch = {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"y": {"z": 1}}}
    assert apply_strategic_merge_patch(target, patch, POD) == {
        "metadata": {"labels": {"b": "2", "c": "3"}},
        "spec": {"x": 1, "y": {"z": 1}},
    }


def test_smp_does_not_mutate_inputs() -> None:
    target = _pod(containers=[{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}])
    patch = {
        "spec": {
            "containers": [{"name": "a", "env": [{"name": "F", "value": "2"}]}, {"name": "b", "args": ["x"]}],
            "tolerations": [{"key": "k"}],
        }
    }
    target_copy, patch_copy = copy.deepcopy(target), copy.deepcopy(patch)
    result = apply_strategic_merge_patch(target, patch, POD)
    result["spec"]["containers"][1]["args"].append("y")
    result["spec"]["tolerations"][0]["key"] = "changed"
    result["spec"]["containers"][0]["env"][0]["value"] = "changed"
    assert target == target_copy
    assert patch == patch_copy


def test_smp_merges_lists_by_key() -> None:
    target = _pod(
        containers=[
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80, "name": "http"}]},
            {"name": "b", "image": "b:1"},
        ]
    )
    patch = {
        "spec": {
            "containers": [
                {"name": "b", "image": "b:2"},
                {"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}]},
                {"name": "c", "image": "c:1"},
            ]
        }
    }
    assert apply_strategic_merge_patch(target, patch, POD)["spec"]["containers"] == [
        {
            "name": "a",
            "image": "a:1",
            "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}],
        },
        {"name": "b", "image": "b:2"},
        {"name": "c", "image": "c:1"},
    ]


def test_smp_merges_deployment_template_containers() -> None:
    target = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "env": [{"name": "X", "value": "1"}],
                            "volumeMounts": [{"mountPath": "/m", "name": "v"}],
                        },
                    ]
                }
            }
        }
    }
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "env": [{"name": "Y", "value": "2"}],
                            "volumeMounts": [{"mountPath": "/m", "readOnly": True}],
                        },
                    ]
                }
            }
        }
    }
    result = apply_strategic_merge_patch(target, patch, DEPLOYMENT)
    assert result["spec"]["template"]["spec"]["containers"] == [
        {
            "name": "a",
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            "volumeMounts": [{"mountPath": "/m", "name": "v", "readOnly": True}],
        },
    ]


def test_smp_replaces_lists_without_strategy() -> None:
    target = _pod(tolerations=[{"key": "a"}], containers=[{"name": "a", "args": ["1", "2"]}])
    patch = {"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "a", "args": ["3"]}]}}
    result = apply_strategic_merge_patch(target, patch, POD)
    assert result["spec"]["tolerations"] == [{"key": "b"}]
    assert result["spec"]["containers"] == [{"name": "a", "args": ["3"]}]


@pytest.mark.parametrize("kind_key", [None, "example.com/v1/Thing"])
def test_smp_without_metadata_replaces_lists_and_merges_maps(kind_key: str | None) -> None:
    target = {"metadata": {"finalizers": ["a"], "labels": {"x": "1"}}, "spec": {"containers": [{"name": "a"}]}}
    patch = {"metadata": {"finalizers": ["b"], "labels": {"y": "2"}}, "spec": {"containers": [{"name": "b"}]}}
    assert apply_strategic_merge_patch(target, patch, kind_key) == {
        "metadata": {"finalizers": ["b"], "labels": {"x": "1", "y": "2"}},
        "spec": {"containers": [{"name": "b"}]},
    }


def test_smp_primitive_merge_list_is_a_union() -> None:
    target = {"metadata": {"finalizers": ["a", "b"]}}
    patch = {"metadata": {"finalizers": ["c", "a"]}}
    assert apply_strategic_merge_patch(target, patch, POD) == {"metadata": {"finalizers": ["a", "b", "c"]}}


def test_smp_primitive_merge_list_rejects_maps() -> None:
    with pytest.raises(PatchError, match="expects primitive values"):
        apply_strategic_merge_patch({}, {"metadata": {"finalizers": [{"a": 1}]}}, POD)


def test_smp_owner_references_by_uid() -> None:
    target = {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}
    patch = {"metadata": {"ownerReferences": [{"uid": "2", "controller": True}, {"uid": "1", "$patch": "delete"}]}}
    assert apply_strategic_merge_patch(target, patch, "v1/ConfigMap") == {
        "metadata": {"ownerReferences": [{"uid": "2", "name": "b", "controller": True}]},
    }


def test_smp_service_ports_by_port() -> None:
    target = {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}
    patch = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}]}}
    assert apply_strategic_merge_patch(target, patch, "v1/Service")["spec"]["ports"] == [
        {"port": 80, "targetPort": 8080, "name": "http"},
        {"port": 443},
    ]


def test_smp_status_conditions_by_type() -> None:
    target = {"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Scheduled"}]}}
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert apply_strategic_merge_patch(target, patch, POD)["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Scheduled"},
    ]


def test_smp_list_item_missing_merge_key() -> None:
    with pytest.raises(PatchError) as err:
        apply_strategic_merge_patch(_pod(), {"spec": {"containers": [{"image": "x"}]}}, POD)
    assert err.value.message == "map: {'image': 'x'} does not contain declared merge key: name"
    assert err.value.code == 422


def test_smp_list_item_not_a_map() -> None:
    with pytest.raises(PatchError, match="expects maps with merge key 'name'"):
        apply_strategic_merge_patch(_pod(), {"spec": {"containers": ["x"]}}, POD)


def test_smp_patch_must_be_an_object() -> None:
    with pytest.raises(PatchError) as err:
        apply_strategic_merge_patch({}, [1], POD)
    assert err.value.code == 400


def test_smp_target_that_is_not_an_object_starts_empty() -> None:
    assert apply_strategic_merge_patch(None, {"a": 1}, None) == {"a": 1}


# $patch on maps


def test_smp_patch_replace_on_map() -> None:
    target = {"spec": {"selector": {"matchLabels": {"a": "1"}, "other": 1}, "x": 1}}
    patch = {"spec": {"selector": {"$patch": "replace", "matchLabels": {"b": "2"}}}}
    assert apply_strategic_merge_patch(target, patch, DEPLOYMENT) == {
        "spec": {"selector": {"matchLabels": {"b": "2"}}, "x": 1},
    }


def test_smp_patch_delete_on_map() -> None:
    target = {"spec": {"selector": {"matchLabels": {"a": "1"}}, "x": 1}}
    patch = {"spec": {"selector": {"$patch": "delete"}}}
    assert apply_strategic_merge_patch(target, patch, DEPLOYMENT) == {"spec": {"x": 1}}


def test_smp_patch_delete_on_absent_map() -> None:
    assert apply_strategic_merge_patch({"a": 1}, {"b": {"$patch": "delete"}}, None) == {"a": 1}


def test_smp_patch_delete_on_root() -> None:
    assert apply_strategic_merge_patch({"a": 1}, {"$patch": "delete"}, None) == {}


def test_smp_patch_merge_on_map_is_the_default() -> None:
    target = {"spec": {"a": 1}}
    assert apply_strategic_merge_patch(target, {"spec": {"$patch": "merge", "b": 2}}, None) == {
        "spec": {"a": 1, "b": 2},
    }


def test_smp_unknown_patch_directive_on_map() -> None:
    with pytest.raises(PatchError, match="Unknown patch type: frobnicate in map"):
        apply_strategic_merge_patch({}, {"spec": {"$patch": "frobnicate"}}, None)


# $patch in lists


def test_smp_patch_replace_in_list() -> None:
    target = _pod(containers=[{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])
    patch = {"spec": {"containers": [{"name": "c", "image": "c"}, {"$patch": "replace"}]}}
    result = apply_strategic_merge_patch(target, patch, POD)
    assert result["spec"]["containers"] == [{"name": "c", "image": "c"}]


def test_smp_patch_delete_in_list() -> None:
    target = _pod(containers=[{"name": "a"}, {"name": "b"}, {"name": "c"}])
    patch = {"spec": {"containers": [{"name": "b", "$patch": "delete"}, {"name": "d"}]}}
    assert apply_strategic_merge_patch(target, patch, POD)["spec"]["containers"] == [
        {"name": "a"},
        {"name": "c"},
        {"name": "d"},
    ]


def test_smp_patch_delete_in_list_without_merge_key() -> None:
    with pytest.raises(PatchError, match="does not contain declared merge key: name"):
        apply_strategic_merge_patch(_pod(), {"spec": {"containers": [{"$patch": "delete"}]}}, POD)


def test_smp_patch_merge_in_list_is_rejected() -> None:
    with pytest.raises(PatchError, match="merging lists cannot yet be specified in the patch"):
        apply_strategic_merge_patch(_pod(), {"spec": {"containers": [{"$patch": "merge"}]}}, POD)


def test_smp_unknown_patch_directive_in_list() -> None:
    patch = {"spec": {"containers": [{"name": "a", "$patch": "frobnicate"}]}}
    with pytest.raises(PatchError, match="Unknown patch type: frobnicate"):
        apply_strategic_merge_patch(_pod(), patch, POD)


def test_smp_directives_in_new_items_are_processed() -> None:
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "resources": {"$patch": "replace", "limits": {"cpu": "1"}},
                    "env": [{"name": "X", "value": None}],
                }
            ]
        }
    }
    assert apply_strategic_merge_patch(_pod(), patch, POD)["spec"]["containers"] == [
        {"name": "a", "resources": {"limits": {"cpu": "1"}}, "env": [{"name": "X"}]},
    ]


# $retainKeys


def test_smp_retain_keys_on_map() -> None:
    target = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    result = apply_strategic_merge_patch(target, patch, DEPLOYMENT)
    assert result == {"spec": {"strategy": {"type": "Recreate"}}}


def test_smp_retain_keys_in_list_items() -> None:
    target = _pod(volumes=[{"name": "v", "emptyDir": {}}, {"name": "w", "secret": {"secretName": "s"}}])
    patch = {
        "spec": {
            "volumes": [
                {"name": "v", "$retainKeys": ["name", "configMap"], "configMap": {"name": "c"}},
            ]
        }
    }
    assert apply_strategic_merge_patch(target, patch, POD)["spec"]["volumes"] == [
        {"name": "v", "configMap": {"name": "c"}},
        {"name": "w", "secret": {"secretName": "s"}},
    ]


def test_smp_retain_keys_must_be_a_list_of_strings() -> None:
    with pytest.raises(PatchError, match=r"invalid \$retainKeys directive"):
        apply_strategic_merge_patch({}, {"spec": {"$retainKeys": "type"}}, DEPLOYMENT)


# $deleteFromPrimitiveList


def test_smp_delete_from_primitive_list() -> None:
    target = {"metadata": {"finalizers": ["a", "b", "c", "b"]}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}
    assert apply_strategic_merge_patch(target, patch, POD) == {"metadata": {"finalizers": ["a", "c"]}}


def test_smp_delete_from_primitive_list_and_add() -> None:
    target = {"metadata": {"finalizers": ["a", "b"]}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"]}}
    assert apply_strategic_merge_patch(target, patch, POD) == {"metadata": {"finalizers": ["b", "c"]}}


def test_smp_delete_from_absent_primitive_list() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    assert apply_strategic_merge_patch({"metadata": {}}, patch, POD) == {"metadata": {}}


def test_smp_delete_from_primitive_list_must_be_a_list() -> None:
    with pytest.raises(PatchError, match="expected a list"):
        apply_strategic_merge_patch({}, {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}, POD)


# $setElementOrder


def test_smp_set_element_order_of_maps() -> None:
    target = _pod(containers=[{"name": "a"}, {"name": "b"}, {"name": "c"}])
    patch = {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}}
    assert apply_strategic_merge_patch(target, patch, POD)["spec"]["containers"] == [
        {"name": "c"},
        {"name": "a"},
        {"name": "b"},
    ]


def test_smp_set_element_order_with_new_items_and_server_only_items() -> None:
    target = _pod(containers=[{"name": "a"}, {"name": "server"}, {"name": "b"}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "new"}, {"name": "b"}, {"name": "a"}],
            "containers": [{"name": "new", "image": "n"}],
        }
    }
    assert apply_strategic_merge_patch(target, patch, POD)["spec"]["containers"] == [
        {"name": "new", "image": "n"},
        {"name": "server"},
        {"name": "b"},
        {"name": "a"},
    ]


def test_smp_set_element_order_of_primitives() -> None:
    target = {"metadata": {"finalizers": ["a", "b", "c"]}}
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"]}}
    assert apply_strategic_merge_patch(target, patch, POD) == {"metadata": {"finalizers": ["c", "b", "a"]}}


def test_smp_set_element_order_infers_the_key_for_unknown_kinds() -> None:
    target = {"spec": {"items": [{"id": 1, "x": 1}, {"id": 2, "x": 2}]}}
    patch = {"spec": {"$setElementOrder/items": [{"id": 2}, {"id": 1}]}}
    assert apply_strategic_merge_patch(target, patch, None) == {
        "spec": {"items": [{"id": 2, "x": 2}, {"id": 1, "x": 1}]},
    }


def test_smp_set_element_order_on_absent_list_is_ignored() -> None:
    patch = {"spec": {"$setElementOrder/containers": [{"name": "a"}]}}
    assert apply_strategic_merge_patch(_pod(), patch, POD)["spec"] == {}


def test_smp_set_element_order_must_be_a_list() -> None:
    with pytest.raises(PatchError, match="expected a list"):
        apply_strategic_merge_patch(_pod(), {"spec": {"$setElementOrder/containers": {"name": "a"}}}, POD)


def test_smp_directives_never_leak_into_the_result() -> None:
    target = _pod(containers=[{"name": "a"}], volumes=[{"name": "v", "emptyDir": {}}])
    patch = {
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": ["x"],
            "$setElementOrder/finalizers": ["y"],
            "finalizers": ["y"],
        },
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "b"}],
            "volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/"}}],
        },
    }
    result = apply_strategic_merge_patch(target, patch, POD)
    assert "$" not in repr(result)
    assert result["spec"]["containers"] == [{"name": "b"}, {"name": "a"}]
