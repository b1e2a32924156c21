"""What these tests share."""

from typing import Any

from kopf._cogs.structs.references import Resource

KEX = Resource(
    "kopf.dev",
    "v1",
    "kopfexamples",
    kind="KopfExample",
    singular="kopfexample",
    shortcuts=frozenset({"kex"}),
    categories=frozenset({"all"}),
    namespaced=True,
)


PODS = Resource("", "v1", "pods", kind="Pod", singular="pod", namespaced=True)


METRIC_PODS = Resource("metrics.k8s.io", "v1beta1", "pods", kind="PodMetrics", namespaced=True)


WIDGETS_A = Resource("a.example.com", "v1", "widgets", kind="Widget")


WIDGETS_B = Resource("b.example.com", "v1", "widgets", kind="Widget")


def obj(
    *, labels: dict[str, str] | None = None, spec: dict[str, Any] | None = None, deleted: bool = False
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "n1", "namespace": "ns1", "labels": labels or {}}
    if deleted:
        metadata["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": spec or {}}


def fn1(**_: Any) -> None:
    pass


def fn2(**_: Any) -> None:
    pass


def ids_of(handlers: list[Any]) -> list[str]:
    return [handler.id for handler in handlers]
