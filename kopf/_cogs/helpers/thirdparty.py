"""
Optional integrations with 3rd-party Kubernetes client libraries.

Neither the official ``kubernetes`` client nor ``pykube-ng`` is a dependency:
they are never imported eagerly. An object can only be a model of a library
if that library is already imported by the operator's code, so the detection
looks at the object's class and ``sys.modules`` instead of importing anything.
"""

import datetime
import importlib
import sys
from collections.abc import Mapping, MutableMapping
from types import ModuleType
from typing import Any


def is_kubernetes_model(obj: Any) -> bool:
    """Whether the object is a model of the official client (e.g. ``kubernetes.client.V1Pod``)."""
    cls = type(obj)
    return (
        cls.__module__.startswith("kubernetes.")
        and isinstance(getattr(cls, "openapi_types", None), Mapping)
        and isinstance(getattr(cls, "attribute_map", None), Mapping)
    )


def is_pykube_object(obj: Any) -> bool:
    """
    Whether the object is a pykube-ng object, i.e. a wrapper of a raw dict in ``.obj``.

    With pykube imported, its ``APIObject`` is checked; otherwise (or additionally),
    any non-mapping object with a mutable mapping in ``.obj`` is treated the same way.
    """
    if isinstance(obj, Mapping):
        return False
    pykube = sys.modules.get("pykube")
    base = getattr(getattr(pykube, "objects", None), "APIObject", None)
    if isinstance(base, type) and isinstance(obj, base):
        return True
    return isinstance(getattr(obj, "obj", None), MutableMapping)


def get_kubernetes_client() -> ModuleType:
    """The ``kubernetes.client`` module, for constructing the models (only when the models are used)."""
    return importlib.import_module("kubernetes.client")


def kubernetes_model_to_dict(obj: Any) -> Any:
    """
    Convert a model of the official client to a JSON-like dict with the API's (camelCase) names.

    Unlike the models' own ``to_dict()`` (which keeps the Python names), this
    gives the same structure as the API would return; unset fields are omitted.
    """
    if is_kubernetes_model(obj):
        result: dict[str, Any] = {}
        for attr, json_name in type(obj).attribute_map.items():
            value = getattr(obj, attr, None)
            if value is not None:
                result[json_name] = kubernetes_model_to_dict(value)
        return result
    elif isinstance(obj, Mapping):
        return {key: kubernetes_model_to_dict(val) for key, val in obj.items()}
    elif isinstance(obj, (list, tuple)):
        return [kubernetes_model_to_dict(val) for val in obj]
    elif isinstance(obj, (datetime.datetime, datetime.date)):
        return obj.isoformat()
    else:
        return obj
