"""``admissionregistration.k8s.io/v1`` webhook configurations: the apiserver's defaults and its validation.

Defaults (visible in ``kubectl get -o yaml``): ``failurePolicy: Fail``, ``matchPolicy: Equivalent``, empty
``namespaceSelector`` and ``objectSelector``, ``timeoutSeconds: 10``, ``reinvocationPolicy: Never`` (mutating),
each rule's ``scope: "*"``, a service's ``port: 443``. Validation refuses what the apiserver refuses, with its
field causes: names that are not fully qualified or not unique, ``sideEffects`` other than ``None`` or
``NoneOnDryRun``, no known ``admissionReviewVersions``, a timeout outside 1..30 seconds, URLs that are not
``https`` (or have a user, a query, a fragment), unknown policies, operations and scopes, bad selectors.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

from kopf_sim.cel import checks
from kopf_sim.kube.objects import JsonDict, name_problems
from kopf_sim.kube.resources import ResourceType, StorageKey
from kopf_sim.writes.validation import (
    Cause,
    invalid,
    label_selector_causes,
    not_supported,
    required,
)

__all__ = ["CONFIGURATIONS", "apply_defaults", "causes"]

MUTATING: StorageKey = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING: StorageKey = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
CONFIGURATIONS = frozenset({MUTATING, VALIDATING})

_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_REINVOCATION_POLICIES = ("IfNeeded", "Never")
_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_REVIEW_VERSIONS = ("v1", "v1beta1")
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_URL_FORM = "; desired format: https://host[/path]"


def apply_defaults(rtype: ResourceType, obj: JsonDict) -> None:
    """The v1 defaults of every webhook of a configuration (in place: the caller's own copy)."""
    for hook in _dicts(obj.get("webhooks")):
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if rtype.storage_key == MUTATING:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in _dicts(hook.get("rules")):
            rule.setdefault("scope", "*")
        config = hook.get("clientConfig")
        if isinstance(config, dict) and isinstance(config.get("service"), dict):
            config["service"].setdefault("port", 443)


def causes(rtype: ResourceType, obj: JsonDict) -> list[Cause]:
    """Why the configuration is refused (empty if it is valid), in the apiserver's order and words."""
    found: list[Cause] = []
    names: set[str] = set()
    for index, hook in enumerate(obj.get("webhooks") or ()):
        path = f"webhooks[{index}]"
        if not isinstance(hook, dict):
            continue
        found.extend(_webhook_causes(hook, path, mutating=rtype.storage_key == MUTATING))
        found.extend(_review_version_causes(hook.get("admissionReviewVersions"), f"{path}.admissionReviewVersions"))
        name = hook.get("name")
        if isinstance(name, str) and name:
            if name in names:
                found.append(
                    {"reason": "FieldValueDuplicate", "message": f'Duplicate value: "{name}"', "field": f"{path}.name"}
                )
            names.add(name)
    return found


def _webhook_causes(hook: JsonDict, path: str, *, mutating: bool) -> Iterator[Cause]:
    yield from _fully_qualified_name_causes(hook.get("name"), f"{path}.name")
    for index, rule in enumerate(hook.get("rules") or ()):
        if isinstance(rule, dict):
            yield from _rule_causes(rule, f"{path}.rules[{index}]")
    yield from _one_of(hook, "failurePolicy", _FAILURE_POLICIES, path)
    yield from _one_of(hook, "matchPolicy", _MATCH_POLICIES, path)
    if mutating:
        yield from _one_of(hook, "reinvocationPolicy", _REINVOCATION_POLICIES, path)
    for field in ("namespaceSelector", "objectSelector"):
        if isinstance(hook.get(field), dict):
            yield from label_selector_causes(hook[field], f"{path}.{field}")
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        yield required(f"{path}.sideEffects", f"must specify one of {', '.join(_SIDE_EFFECTS)}")
    else:
        yield from _one_of(hook, "sideEffects", _SIDE_EFFECTS, path)
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        yield invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds")
    yield from _client_config_causes(hook.get("clientConfig") or {}, f"{path}.clientConfig")
    yield from checks.match_condition_problems(hook.get("matchConditions"), f"{path}.matchConditions")


def _fully_qualified_name_causes(name: Any, path: str) -> Iterator[Cause]:
    if not name:
        yield required(path)
        return
    problems = name_problems(str(name), label=False)
    if problems:
        yield invalid(path, name, ",".join(problems))
    elif len(str(name).split(".")) < 3:
        yield invalid(path, name, "should be a domain with at least three segments separated by dots")


def _one_of(hook: JsonDict, field: str, supported: tuple[str, ...], path: str) -> Iterator[Cause]:
    value = hook.get(field)
    if value is not None and value not in supported:
        yield not_supported(f"{path}.{field}", value, supported)


def _rule_causes(rule: JsonDict, path: str) -> Iterator[Cause]:
    operations = _strings(rule.get("operations"))
    yield from _list_causes(operations, f"{path}.operations", "operations")
    for index, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            yield not_supported(f"{path}.operations[{index}]", operation, _OPERATIONS)
    yield from _list_causes(_strings(rule.get("apiGroups")), f"{path}.apiGroups", "API groups")
    versions = _strings(rule.get("apiVersions"))
    yield from _list_causes(versions, f"{path}.apiVersions", "API versions")
    for index, version in enumerate(versions):
        if not version:
            yield required(f"{path}.apiVersions[{index}]")
    yield from _resources_causes(_strings(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        yield not_supported(f"{path}.scope", scope, _SCOPES)


def _list_causes(values: list[str], path: str, what: str) -> Iterator[Cause]:
    """A rule's list: required, and ``*`` alone if it is there."""
    if not values:
        yield required(path)
    if len(values) > 1 and "*" in values:
        yield invalid(path, values, f"if '*' is present, must not specify other {what}")


def _resources_causes(resources: list[str], path: str) -> Iterator[Cause]:
    if not resources:
        yield required(path)
    wildcard_subresources: set[str] = set()  # x/*
    wildcard_resources: set[str] = set()  # */x
    for index, entry in enumerate(resources):
        if not entry:
            yield required(f"{path}[{index}]")
            continue
        resource, slash, sub = entry.partition("/")
        if not slash:
            continue
        if resource in wildcard_subresources:
            yield invalid(f"{path}[{index}]", entry, f"if '{resource}/*' is present, must not specify {entry}")
        if sub in wildcard_resources:
            yield invalid(f"{path}[{index}]", entry, f"if '*/{sub}' is present, must not specify {entry}")
        if sub == "*":
            wildcard_subresources.add(resource)
        if resource == "*":
            wildcard_resources.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        yield invalid(path, resources, "if '*/*' is present, must not specify other resources")
    if "*" in resources and any("/" not in entry and entry != "*" for entry in resources):
        yield invalid(path, resources, "if '*' is present, must not specify other resources without subresources")


def _review_version_causes(versions: Any, path: str) -> Iterator[Cause]:
    listed = _strings(versions)
    if not listed:
        yield required(path, f"must specify one of {', '.join(_REVIEW_VERSIONS)}")
        return
    seen: set[str] = set()
    for index, version in enumerate(listed):
        if version in seen:
            yield invalid(f"{path}[{index}]", version, "duplicate version")
            continue
        seen.add(version)
    if not any(version in _REVIEW_VERSIONS for version in listed):
        yield invalid(path, listed, f"must include at least one of {', '.join(_REVIEW_VERSIONS)}")


def _client_config_causes(config: Mapping[str, Any], path: str) -> Iterator[Cause]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        yield required(path, "exactly one of url or service is required")
    elif url is not None:
        yield from _url_causes(str(url), f"{path}.url")
    elif isinstance(service, dict):
        yield from _service_causes(service, f"{path}.service")


def _url_causes(url: str, path: str) -> Iterator[Cause]:
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - a bad port is what Go's url.Parse refuses too
    except ValueError as exc:
        yield required(path, f"url must be a valid URL: {exc}{_URL_FORM}")
        return
    if parts.scheme != "https":
        yield invalid(path, parts.scheme, f"'https' is the only allowed URL scheme{_URL_FORM}")
    if not parts.netloc.rpartition("@")[2]:
        yield invalid(path, "", f"host must be specified{_URL_FORM}")
    if "@" in parts.netloc:
        yield invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL")
    if parts.fragment:
        yield invalid(path, parts.fragment, "fragments are not permitted in the URL")
    if parts.query:
        yield invalid(path, parts.query, "query parameters are not permitted in the URL")


def _service_causes(service: Mapping[str, Any], path: str) -> Iterator[Cause]:
    if not service.get("name"):
        yield required(f"{path}.name", "service name is required")
    if not service.get("namespace"):
        yield required(f"{path}.namespace", "service namespace is required")
    port = service.get("port", 443)
    if isinstance(port, int) and not 1 <= port <= 65535:
        yield invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive")
    route = service.get("path")
    if not isinstance(route, str) or route in ("", "/"):
        return
    if route == "//":
        yield invalid(f"{path}.path", route, "segment[0] may not be empty")
        return
    if not route.startswith("/"):
        yield invalid(f"{path}.path", route, "must start with a '/'")
    steps = route[1:].removesuffix("/").split("/")
    for index, step in enumerate(steps):
        if not step:
            yield invalid(f"{path}.path", route, f"segment[{index}] may not be empty")
            continue
        for problem in name_problems(step, label=False):
            yield invalid(f"{path}.path", route, f"segment[{index}]: {problem}")


def _duplicate(field: str, value: str) -> Cause:
    return {"reason": "FieldValueDuplicate", "message": f'Duplicate value: "{value}"', "field": field}


def _dicts(value: Any) -> list[JsonDict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []
