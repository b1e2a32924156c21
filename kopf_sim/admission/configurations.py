"""The webhooks of the stored ``Mutating``/``ValidatingWebhookConfiguration`` objects, as the dispatcher reads them.

The configurations are defaulted and validated when they are written (:mod:`kopf_sim.writes.webhookconfigs`),
so every field read here is set and sane; the defaults are repeated only as a guard.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from kopf_sim.admission.attributes import StoreView
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.resources import StorageKey

__all__ = ["EXEMPT", "MUTATING", "VALIDATING", "Endpoint", "Webhook", "webhooks"]

MUTATING: StorageKey = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING: StorageKey = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
#: The apiserver never calls webhooks for the webhook configurations themselves (nobody could fix a bad one).
EXEMPT = frozenset({MUTATING, VALIDATING})


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """Where a webhook is called: its URL (a service's as the apiserver builds it), and what to trust."""

    url: str
    service_key: str | None  # ``service:<ns>/<name>:<port><path>``: how in-process handlers may serve a service
    ca_bundle: bytes | None
    service: tuple[str, str] | None = None  # the service's namespace and name, if it is called through one


@dataclasses.dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration, with its position (the key that reinvocation remembers it by)."""

    configuration: str
    index: int
    mutating: bool
    spec: Mapping[str, Any]

    @property
    def key(self) -> tuple[str, int]:
        return (self.configuration, self.index)

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def failure_policy(self) -> str:
        return str(self.spec.get("failurePolicy") or "Fail")

    @property
    def match_policy(self) -> str:
        return str(self.spec.get("matchPolicy") or "Equivalent")

    @property
    def reinvocation_policy(self) -> str:
        return str(self.spec.get("reinvocationPolicy") or "Never")

    @property
    def timeout(self) -> int:
        return int(self.spec.get("timeoutSeconds") or 10)

    @property
    def review_versions(self) -> Sequence[str]:
        return [str(version) for version in self.spec.get("admissionReviewVersions") or ()]

    @property
    def rules(self) -> Sequence[Mapping[str, Any]]:
        return [rule for rule in self.spec.get("rules") or () if isinstance(rule, Mapping)]

    @property
    def match_conditions(self) -> Sequence[Mapping[str, Any]]:
        return [condition for condition in self.spec.get("matchConditions") or () if isinstance(condition, Mapping)]

    def selector(self, field: str) -> Mapping[str, Any] | None:
        value = self.spec.get(field)
        return value if isinstance(value, Mapping) else None

    def endpoint(self) -> Endpoint:
        config: JsonDict = dict(self.spec.get("clientConfig") or {})
        ca_bundle = _decoded(config.get("caBundle"))
        if config.get("url"):
            return Endpoint(str(config["url"]), None, ca_bundle)
        service = config.get("service") or {}
        name, namespace = service.get("name"), service.get("namespace")
        port = service.get("port", 443)
        path = service.get("path") or ""
        key = f"service:{namespace}/{name}:{port}{path or '/'}"
        url = f"https://{name}.{namespace}.svc:{port}{path}"
        return Endpoint(url, key, ca_bundle, service=(str(namespace), str(name)))


def _decoded(ca_bundle: Any) -> bytes | None:
    if not isinstance(ca_bundle, str) or not ca_bundle:
        return None
    try:
        return base64.b64decode(ca_bundle)
    except (binascii.Error, ValueError):
        return None  # refused when the configuration is written; not trusted if stored otherwise


def webhooks(store: StoreView, *, mutating: bool) -> list[Webhook]:
    """The webhooks in the apiserver's order: configurations by name, then webhooks as listed in each."""
    found: list[Webhook] = []
    for config in store.objects(MUTATING if mutating else VALIDATING):
        for index, spec in enumerate(config.get("webhooks") or ()):
            if isinstance(spec, Mapping):
                found.append(Webhook(str(meta(config)["name"]), index, mutating, spec))
    return found
