"""
Run by both interpreters (ours and the published Kopf's): the hierarchy functions on plain dicts and the
official client's models, the results printed as JSON (errors as their type only: the wording differs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import kubernetes.client

import kopf

OWNER = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "ex1", "namespace": "default", "uid": "uid-1", "labels": {"team": "a"}},
}
UNLABELLED = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "ex2", "namespace": "default", "uid": "uid-2"},
}
CLUSTERWIDE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1", "uid": "uid-3"}}


def children() -> list[dict[str, Any]]:
    return [
        {"kind": "Job"},
        {"kind": "Deployment", "spec": {"template": {}}},
        {"kind": "Pod", "metadata": {"name": "named", "namespace": "", "labels": {"team": "b"}}},
    ]


CASES: dict[str, Callable[[Any], Any]] = {
    "label": lambda objs: kopf.label(objs, {"app": "x"}),
    "label-empty": lambda objs: kopf.label(objs, {}, nested="spec.template"),
    "label-forced": lambda objs: kopf.label(objs, {"team": "c"}, forced=True, nested=["spec.template"]),
    "owner": lambda objs: kopf.append_owner_reference(objs, OWNER),
    "owner-twice": lambda objs: (kopf.append_owner_reference(objs, OWNER), kopf.append_owner_reference(objs, OWNER)),
    "owner-flags": lambda objs: kopf.append_owner_reference(objs, OWNER, controller=False, block_owner_deletion=False),
    "owner-removed": lambda objs: (kopf.append_owner_reference(objs, OWNER), kopf.remove_owner_reference(objs, OWNER)),
    "name": lambda objs: kopf.harmonize_naming(objs, "some"),
    "name-strict-forced": lambda objs: kopf.harmonize_naming(objs, "some", strict=True, forced=True),
    "namespace": lambda objs: kopf.adjust_namespace(objs, "ns1"),
    "namespace-forced": lambda objs: kopf.adjust_namespace(objs, "ns1", forced=True),
    "namespace-none": lambda objs: kopf.adjust_namespace(objs, None),
    "namespace-none-forced": lambda objs: kopf.adjust_namespace(objs, None, forced=True),
    "adopt": lambda objs: kopf.adopt(objs, OWNER, nested="spec.template"),
    "adopt-strict-forced": lambda objs: kopf.adopt(objs, OWNER, strict=True, forced=True),
    "adopt-unlabelled": lambda objs: kopf.adopt(objs, UNLABELLED, nested="spec.template"),
    "adopt-clusterwide": lambda objs: kopf.adopt(objs, CLUSTERWIDE),
    "adopt-no-owner": lambda objs: kopf.adopt(objs),
}


def model_case() -> Any:
    pod = kubernetes.client.V1Pod()
    kopf.adopt(pod, OWNER)
    return kubernetes.client.ApiClient().sanitize_for_serialization(pod)


def main() -> None:
    results: dict[str, Any] = {}
    for name, case in CASES.items():
        objs = children()
        try:
            case(objs)
        except Exception as e:
            results[name] = f"raised {type(e).__name__}"
        else:
            results[name] = objs
    results["model"] = model_case()
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
