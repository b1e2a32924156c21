"""Server-side apply creating objects: the applier's fields and the manager's entry."""

import copy

from .helpers import _apply, _deployment, _fields, _managers

# ----------------------------------------------------------------------------------------------------


def test_apply_creates_with_an_apply_entry() -> None:
    applied = _deployment(
        replicas=2,
        template={
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "ports": [{"containerPort": 80}]},
                ]
            }
        },
    )
    applied["metadata"]["labels"] = {"app": "x"}
    applied["metadata"]["finalizers"] = ["f"]
    result = _apply(None, applied)
    assert result["spec"] == applied["spec"]
    assert result["metadata"]["name"] == "d"
    assert result["metadata"]["namespace"] == "ns"
    assert result["apiVersion"] == "apps/v1"
    assert result["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": "2024-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:finalizers": {'v:"f"': {}}, "f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"c"}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:name": {},
                                    # Ports are keyed by number and protocol, which defaults to TCP.
                                    "f:ports": {
                                        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
                                    },
                                }
                            }
                        }
                    },
                },
            },
        }
    ]


def test_apply_does_not_track_identity_and_server_fields() -> None:
    applied = _deployment(replicas=1)
    applied["metadata"].update(
        uid="u", resourceVersion="5", generation=3, creationTimestamp="x", managedFields=[{"manager": "evil"}]
    )
    result = _apply(None, applied)
    assert "uid" not in result["metadata"]
    assert "resourceVersion" not in result["metadata"]
    assert "generation" not in result["metadata"]
    assert _fields(result, "kubectl") == {".spec.replicas"}
    assert list(_managers(result)) == ["kubectl"]


def test_apply_ignores_nulls() -> None:
    result = _apply(None, _deployment(replicas=1, paused=None))
    assert result["spec"] == {"replicas": 1}
    assert _fields(result, "kubectl") == {".spec.replicas"}


def test_apply_does_not_mutate_inputs() -> None:
    live = _apply(None, _deployment(replicas=1, template={"spec": {"containers": [{"name": "a"}]}}))
    applied = _deployment(replicas=2, template={"spec": {"containers": [{"name": "a", "image": "x"}]}})
    live_copy, applied_copy = copy.deepcopy(live), copy.deepcopy(applied)
    result = _apply(live, applied)
    result["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert live == live_copy
    assert applied == applied_copy


# ----------------------------------------------------------------------------------------------------
