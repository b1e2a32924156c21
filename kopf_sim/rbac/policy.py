"""Which requests the stored RBAC objects allow: rules, bindings, aggregated ClusterRoles.

A RoleBinding grants its Role's (or ClusterRole's) rules in its own namespace; a ClusterRoleBinding grants a
ClusterRole's rules everywhere. A ClusterRole with an ``aggregationRule`` has the rules of the ClusterRoles
that its selectors match (as the apiserver's aggregation controller would have written them into it).
A ``cluster-admin`` ClusterRole is there even when not stored, as in every cluster, and every authenticated
user may ask about its own permissions (``system:basic-user``) and read discovery (``system:discovery``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from kopf_sim.rbac.attributes import Attributes
from kopf_sim.rbac.users import User

__all__ = ["Decision", "ObjectsView", "Policy", "rule_allows"]

RBAC = "rbac.authorization.k8s.io"
JsonDict = dict[str, Any]

_CLUSTER_ADMIN_RULES: list[JsonDict] = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
_BASIC_USER_RULES: list[JsonDict] = [
    {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
        "verbs": ["create"],
    },
    {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
]


class ObjectsView(Protocol):
    """What the policy reads of the store: its objects by (group, plural), in a namespace or all."""

    def objects(self, key: tuple[str, str], namespace: str | None = None) -> Iterator[JsonDict]: ...


@dataclasses.dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def rule_allows(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """Whether one PolicyRule allows the request (verbs, API groups, resources, resource names)."""
    verbs = rule.get("verbs") or ()
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and attrs.group not in groups:
        return False
    resources = rule.get("resources") or ()
    wanted = attrs.resource_text
    if not any(r == "*" or r == wanted or (attrs.subresource and r == f"*/{attrs.subresource}") for r in resources):
        return False
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


class Policy:
    """The RBAC objects of a store, asked about one request at a time (read afresh: they may change)."""

    def __init__(self, store: ObjectsView) -> None:
        self.store = store

    def decide(self, user: User, attrs: Attributes) -> Decision:
        if user.is_admin:
            return Decision(True, 'RBAC: allowed by the group "system:masters"')
        if "system:authenticated" in user.groups and any(rule_allows(r, attrs) for r in _BASIC_USER_RULES):
            return Decision(True, 'RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole '
                            '"system:basic-user" to Group "system:authenticated"')  # fmt: skip
        for binding, role_kind, role_name, rules in self._grants(user, attrs.namespace):
            if any(rule_allows(rule, attrs) for rule in rules):
                return Decision(
                    True, f"RBAC: allowed by {binding} of {role_kind} {_quoted(role_name)} to {_subject(user)}"
                )
        return Decision(False)

    def rules_for(self, user: User, namespace: str) -> list[JsonDict]:
        """All the rules that apply to the user in the namespace (for SelfSubjectRulesReview)."""
        if user.is_admin:
            return list(_CLUSTER_ADMIN_RULES)
        rules = list(_BASIC_USER_RULES)
        for _, _, _, granted in self._grants(user, namespace):
            rules.extend(granted)
        return rules

    def _grants(self, user: User, namespace: str) -> Iterator[tuple[str, str, str, list[JsonDict]]]:
        """The bindings that name the user, with the rules of their roles: cluster-wide, then the namespace's."""
        for binding in self.store.objects((RBAC, "clusterrolebindings")):
            if _names_user(binding, user, ""):
                role = str((binding.get("roleRef") or {}).get("name", ""))
                name = _quoted((binding.get("metadata") or {}).get("name", ""))
                yield f"ClusterRoleBinding {name}", "ClusterRole", role, self._cluster_role_rules(role)
        if not namespace:
            return
        for binding in self.store.objects((RBAC, "rolebindings"), namespace):
            if _names_user(binding, user, namespace):
                ref = binding.get("roleRef") or {}
                role, kind = str(ref.get("name", "")), str(ref.get("kind", ""))
                name = _quoted(f"{(binding.get('metadata') or {}).get('name', '')}/{namespace}")
                rules = self._role_rules(role, namespace) if kind == "Role" else self._cluster_role_rules(role)
                yield f"RoleBinding {name}", kind, role, rules

    def _role_rules(self, name: str, namespace: str) -> list[JsonDict]:
        for role in self.store.objects((RBAC, "roles"), namespace):
            if (role.get("metadata") or {}).get("name") == name:
                return list(role.get("rules") or ())
        return []

    def _cluster_role_rules(self, name: str) -> list[JsonDict]:
        roles = list(self.store.objects((RBAC, "clusterroles")))
        found = next((r for r in roles if (r.get("metadata") or {}).get("name") == name), None)
        if found is None:
            return list(_CLUSTER_ADMIN_RULES) if name == "cluster-admin" else []
        rules = list(found.get("rules") or ())
        selectors = (found.get("aggregationRule") or {}).get("clusterRoleSelectors") or ()
        for other in roles:
            labels = (other.get("metadata") or {}).get("labels") or {}
            if other is not found and any(_selects(selector, labels) for selector in selectors):
                rules.extend(other.get("rules") or ())
        return rules


def _names_user(binding: Mapping[str, Any], user: User, namespace: str) -> bool:
    return any(_subject_is(subject, user, namespace) for subject in binding.get("subjects") or ())


def _subject_is(subject: Mapping[str, Any], user: User, namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        return user.service_account == (subject.get("namespace") or namespace, name)
    return False


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A label selector (``matchLabels``, ``matchExpressions``) against labels; an empty one selects nothing."""
    match_labels = selector.get("matchLabels") or {}
    expressions: Sequence[Mapping[str, Any]] = selector.get("matchExpressions") or ()
    if not match_labels and not expressions:
        return False
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    return all(_expression_holds(expression, labels) for expression in expressions)


def _expression_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expression.get("key", "")), expression.get("operator")
    values = [str(value) for value in expression.get("values") or ()]
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def _quoted(text: str) -> str:
    return f'"{text}"'


def _subject(user: User) -> str:
    account = user.service_account
    if account is not None:
        return f'ServiceAccount "{account[1]}/{account[0]}"'
    return f'User "{user.name}"'
