"""CRDs with permissive schemas (any spec & status) for the tests of kopf against the simulated cluster."""

from __future__ import annotations

from typing import Any


def permissive_crd(
    group: str,
    plural: str,
    singular: str,
    kind: str,
    *,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A namespaced ``v1`` CRD with the status subresource, whose spec & status keep any fields."""
    names: dict[str, Any] = {"plural": plural, "singular": singular, "kind": kind}
    if short_names:
        names["shortNames"] = list(short_names)
    if categories:
        names["categories"] = list(categories)
    anything = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": names,
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": dict(anything), "status": dict(anything)},
                        }
                    },
                }
            ],
        },
    }


KOPFEXAMPLES_CRD = permissive_crd("kopf.dev", "kopfexamples", "kopfexample", "KopfExample", short_names=("kex",))
