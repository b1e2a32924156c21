"""Least-privilege RBAC from the tests: what the operator asked for, and whether a given RBAC allows it.

``pytest --kopf-rbac-report PATH`` records every request of the operators under test (verb, API group,
resource, namespace; the tests' own requests are not the operator's) and writes the minimal ClusterRole and
Roles that would have allowed them. With pytest-xdist, each worker leaves its records next to PATH and the
controller merges them. ``--kopf-rbac-check rbac.yaml`` fails every test whose operator made a request that
the file's roles do not allow, naming the verb, the resource and the namespace.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
import yaml

from kopf_sim.rbac.access import Access, Identity
from kopf_sim.rbac.attributes import Attributes
from kopf_sim.rbac.policy import Decision, rule_allows

__all__ = [
    "OPERATOR_LABEL",
    "RbacCheck",
    "RbacSession",
    "Request",
    "minimal_rbac",
]

#: The label of the token that the operator under test connects with (see ``SimControls``).
OPERATOR_LABEL = "operator"
ROLE_NAME = "kopf-operator"
RBAC_API = "rbac.authorization.k8s.io/v1"

Request = tuple[str, str, str, str]  # verb, API group, resource (or resource/subresource), namespace ("": cluster)


class RbacCheckError(Exception):
    """The file given to ``--kopf-rbac-check`` cannot be read as RBAC."""


@dataclasses.dataclass(frozen=True)
class RbacCheck:
    """The rules of an RBAC file: ClusterRoles everywhere, each Role in its namespace.

    Everything in the file is taken as granted to the operator (its bindings are not followed). A Role without
    a namespace, or with a template such as ``"{{NAMESPACE}}"``, applies in every namespace.
    """

    path: pathlib.Path
    everywhere: tuple[Mapping[str, Any], ...]
    by_namespace: Mapping[str | None, tuple[Mapping[str, Any], ...]]

    @classmethod
    def load(cls, path: pathlib.Path) -> RbacCheck:
        try:
            documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except (OSError, yaml.YAMLError) as exc:
            raise RbacCheckError(f"--kopf-rbac-check: cannot read {path}: {exc}") from None
        everywhere: list[Mapping[str, Any]] = []
        by_namespace: dict[str | None, list[Mapping[str, Any]]] = {}
        for document in _flattened(documents):
            kind = document.get("kind")
            rules = [r for r in document.get("rules") or () if isinstance(r, Mapping)]
            if kind == "ClusterRole":
                everywhere += rules
            elif kind == "Role":
                namespace = (document.get("metadata") or {}).get("namespace")
                key = None if not namespace or "{{" in str(namespace) else str(namespace)
                by_namespace.setdefault(key, []).extend(rules)
        if not everywhere and not by_namespace:
            raise RbacCheckError(f"--kopf-rbac-check: {path} has no Role or ClusterRole")
        return cls(path, tuple(everywhere), {k: tuple(v) for k, v in by_namespace.items()})

    def allows(self, attrs: Attributes) -> bool:
        rules = [*self.everywhere, *self.by_namespace.get(None, ())]
        if attrs.namespace:
            rules += self.by_namespace.get(attrs.namespace, ())
        return any(rule_allows(rule, attrs) for rule in rules)


def _flattened(documents: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for document in documents:
        if isinstance(document, Mapping) and document.get("kind") == "List":
            yield from (item for item in document.get("items") or () if isinstance(item, Mapping))
        elif isinstance(document, Mapping):
            yield document


class RbacSession:
    """The session's records of the operator's requests, and the checks against ``--kopf-rbac-check``."""

    def __init__(self, report: pathlib.Path | None, check: RbacCheck | None, worker: str | None) -> None:
        self.report = report
        self.check = check
        self.worker = worker
        self.requests: set[Request] = set()

    def watch(self, access: Access, violations: list[str]) -> Callable[[], None]:
        """Record the operator's requests to this access point; append the checked-out ones to ``violations``."""

        def observed(identity: Identity, attrs: Attributes, decision: Decision) -> None:
            if identity.token_label != OPERATOR_LABEL:
                return
            self.requests.add((attrs.verb, attrs.group, attrs.resource_text, attrs.namespace))
            if self.check is not None and not self.check.allows(attrs):
                text = f"{attrs.describe()} (outside {self.check.path.name})"
                if text not in violations:
                    violations.append(text)

        return access.observe(observed)

    # -- the report, merged over the workers -------------------------------------------------------------

    @property
    def parts_dir(self) -> pathlib.Path:
        assert self.report is not None
        return self.report.with_name(self.report.name + ".parts")

    def clear_parts(self) -> None:
        """At the start of the session (the controller): no records of an earlier run are merged."""
        if self.report is not None and self.parts_dir.is_dir():
            for part in self.parts_dir.glob("*.json"):
                part.unlink()

    def finish(self) -> None:
        """A worker leaves its records; the controller (or a session without workers) writes the report."""
        if self.report is None:
            return
        if self.worker is not None:
            self.parts_dir.mkdir(parents=True, exist_ok=True)
            (self.parts_dir / f"{self.worker}.json").write_text(json.dumps(sorted(self.requests)))
            return
        requests = set(self.requests)
        if self.parts_dir.is_dir():
            for part in sorted(self.parts_dir.glob("*.json")):
                requests.update((str(v), str(g), str(r), str(n)) for v, g, r, n in json.loads(part.read_text()))
                part.unlink()
            self.parts_dir.rmdir()
        self.report.parent.mkdir(parents=True, exist_ok=True)
        self.report.write_text(minimal_rbac(requests))


def minimal_rbac(requests: Iterable[Request]) -> str:
    """The ClusterRole (for cluster-wide requests) and Roles (per namespace) that allow exactly these requests."""
    by_namespace: dict[str, set[Request]] = {}
    for request in requests:
        by_namespace.setdefault(request[3], set()).add(request)
    documents: list[dict[str, Any]] = []
    for namespace in sorted(by_namespace):
        rules = _rules(by_namespace[namespace])
        if namespace:
            metadata = {"name": ROLE_NAME, "namespace": namespace}
            documents.append({"apiVersion": RBAC_API, "kind": "Role", "metadata": metadata, "rules": rules})
        else:
            documents.append(
                {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": {"name": ROLE_NAME}, "rules": rules}
            )
    header = (
        "# The least-privilege RBAC of the operator, as its tests used it (pytest --kopf-rbac-report).\n"
        "# Bind it to the operator's service account; requests that the tests did not make are not allowed.\n"
    )
    if not documents:
        return header + "# The operator made no requests.\n"
    return header + yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=None)


def _rules(requests: set[Request]) -> list[dict[str, Any]]:
    """One rule per API group and set of verbs, with the resources that need exactly those verbs."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for verb, group, resource, _ in requests:
        verbs.setdefault((group, resource), set()).add(verb)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), granted in sorted(verbs.items()):
        grouped.setdefault((group, tuple(sorted(granted))), []).append(resource)
    return [
        {"apiGroups": [group], "resources": resources, "verbs": list(granted)}
        for (group, granted), resources in sorted(grouped.items())
    ]


VIOLATIONS_KEY = pytest.StashKey[list[str]]()
REPORTED_KEY = pytest.StashKey[int]()


def failed_report(item: pytest.Item, report: pytest.TestReport) -> None:
    """Turn a phase's report into a failure if the operator made requests outside the checked RBAC since the last."""
    violations = item.stash.get(VIOLATIONS_KEY, [])
    already = item.stash.get(REPORTED_KEY, 0)
    if len(violations) <= already or report.when == "setup":
        return
    item.stash[REPORTED_KEY] = len(violations)
    lines = "\n".join(f"  {text}" for text in violations[already:])
    message = f"The operator made requests that the checked RBAC does not allow:\n{lines}"
    report.outcome = "failed"
    report.longrepr = message if report.longrepr is None else f"{report.longrepr}\n\n{message}"
