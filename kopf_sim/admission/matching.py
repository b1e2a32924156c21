"""Which webhooks a request calls, and as which resource: selectors, rules and the match policy, as the apiserver.

A webhook is called if its namespace and object selectors match, and one of its rules matches the request's
resource, or (``matchPolicy: Equivalent``, the default) another served version of the same resource: then it
is called as of that version (``kind``/``resource``), with the object converted to it, while
``requestKind``/``requestResource`` say what the client asked for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kopf_sim.admission.attributes import Attributes, GroupVersionKind, StoreView
from kopf_sim.admission.conditions import WEBHOOK_VARIABLES, admission_request, authorizer_of, evaluate_conditions
from kopf_sim.admission.configurations import Webhook
from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.resources import ResourceType
from kopf_sim.kube.selectors import LabelSelector

__all__ = ["Invocation", "invocation", "rule_matches"]

_NAMESPACES = ("", "namespaces")


@dataclasses.dataclass(frozen=True)
class Invocation:
    """A webhook to call for a request, and the version of the resource (and the kind) it is called as."""

    webhook: Webhook
    resource: ResourceType
    kind: GroupVersionKind

    def converted(self, obj: JsonDict | None, attrs: Attributes) -> JsonDict | None:
        """The object at the webhook's version: CRD versions (conversion ``None``) differ in ``apiVersion`` only."""
        if obj is None or attrs.kind is not None or obj.get("apiVersion") == self.resource.api_version:
            return obj
        return {**obj, "apiVersion": self.resource.api_version}


def invocation(
    webhook: Webhook, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, store: StoreView
) -> Invocation | None:
    """How the webhook is called for this request, or None if it is not (in the order the apiserver checks).

    Last, its ``matchConditions`` on the object as of the webhook's version; if they cannot tell and the
    failure policy is ``Fail``, the request is forbidden (as the apiserver "fails closed").
    """
    call = _selected(webhook, attrs, obj, old, store)
    if call is None or not webhook.match_conditions:
        return call
    values = {
        "object": call.converted(obj, attrs),
        "oldObject": call.converted(old, attrs),
        "request": admission_request(attrs, call.kind, call.resource),
        "authorizer": authorizer_of(attrs),
    }
    fail_closed = webhook.failure_policy != "Ignore"
    verdict = evaluate_conditions(webhook.match_conditions, values, WEBHOOK_VARIABLES, fail_closed=fail_closed)
    if verdict.error is not None:
        raise _forbidden(attrs, verdict.error)
    return call if verdict.matches else None


def _forbidden(attrs: Attributes, why: str) -> errors.ApiError:
    """Go's ``NewForbidden`` for the request's resource and name (no name for a ``generateName`` create)."""
    qualified = errors.qualified(attrs.rtype.plural, attrs.rtype.group)
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    details: JsonDict = {"name": attrs.name} if attrs.name else {}
    if attrs.rtype.group:
        details["group"] = attrs.rtype.group
    details["kind"] = attrs.rtype.plural
    return errors.ApiError(403, "Forbidden", f"{subject} is forbidden: {why}", details=details)


def _selected(
    webhook: Webhook, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, store: StoreView
) -> Invocation | None:
    """The webhook's invocation by its selectors and rules (and the match policy), before its conditions."""
    if not _namespace_matches(webhook, attrs, obj, old, store) or not _object_matches(webhook, obj, old):
        return None
    for rule in webhook.rules:
        if rule_matches(rule, attrs, attrs.rtype):
            return Invocation(webhook, attrs.rtype, attrs.gvk)
    if webhook.match_policy != "Equivalent":
        return None
    equivalents = [t for t in store.catalogue.for_storage(attrs.rtype.storage_key) if t != attrs.rtype]
    for rule in webhook.rules:  # the earlier rules first, as the apiserver honours them
        for equivalent in equivalents:
            if rule_matches(rule, attrs, equivalent):
                kind = attrs.kind or (equivalent.group, equivalent.version, equivalent.kind)
                return Invocation(webhook, equivalent, kind)
    return None


def rule_matches(rule: Mapping[str, Any], attrs: Attributes, rtype: ResourceType) -> bool:
    """Whether a rule covers the request (as of this version of its resource): operation, group, version, scope."""
    return (
        _listed(rule.get("operations"), attrs.operation)
        and _listed(rule.get("apiGroups"), rtype.group)
        and _listed(rule.get("apiVersions"), rtype.version)
        and _scope_matches(str(rule.get("scope") or "*"), attrs, rtype)
        and _resource_matches(rule.get("resources"), rtype.plural, attrs.subresource or "")
    )


def _listed(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _scope_matches(scope: str, attrs: Attributes, rtype: ResourceType) -> bool:
    """``Namespaced`` and ``Cluster`` as the apiserver tells them: a Namespace object is cluster-scoped."""
    cluster_scoped = rtype.storage_key == _NAMESPACES or not attrs.namespace
    if scope == "Namespaced":
        return not cluster_scoped
    if scope == "Cluster":
        return cluster_scoped
    return True


def _resource_matches(resources: Any, plural: str, subresource: str) -> bool:
    """Go's rule: ``pods`` (the main resource only), ``pods/status``, ``pods/*`` (the main one too), ``*/*``."""
    for entry in resources if isinstance(resources, list) else ():
        resource, _, sub = str(entry).partition("/")
        if resource in ("*", plural) and sub in ("*", subresource):
            return True
    return False


def _object_matches(webhook: Webhook, obj: JsonDict | None, old: JsonDict | None) -> bool:
    """The object selector: the new or the old object's labels match (an empty selector matches all)."""
    selector = LabelSelector.from_spec(webhook.selector("objectSelector"))
    if selector.empty:
        return True
    return any(o is not None and selector.matches(meta(o).get("labels")) for o in (obj, old))


def _namespace_matches(
    webhook: Webhook, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, store: StoreView
) -> bool:
    """The namespace selector, on the labels of the request's namespace (of a Namespace itself when it is one).

    Cluster-scoped objects other than namespaces are never exempted by it.
    """
    selector = LabelSelector.from_spec(webhook.selector("namespaceSelector"))
    if selector.empty:
        return True
    if attrs.rtype.storage_key == _NAMESPACES:
        subject = obj if obj is not None else old
        labels = meta(subject).get("labels") if subject is not None else None
    elif attrs.namespace:
        namespace = store.peek(_NAMESPACES, None, attrs.namespace)
        labels = meta(namespace).get("labels") if namespace is not None else None
    else:
        return True
    return selector.matches(labels)
