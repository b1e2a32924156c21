"""CustomResourceDefinitions: what a CRD object makes the simulator serve, and the CRD's own status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.resources import PrinterColumn, ResourceType, ScalePaths

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def crd_problems(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """Field causes for a CRD that the apiserver would reject (the essentials only); ``old`` on updates."""
    causes: list[dict[str, str]] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group", ""), names.get("plural", "")

    def cause(field: str, message: str, reason: str = "FieldValueInvalid") -> None:
        causes.append({"reason": reason, "message": message, "field": field})

    if not group:
        cause("spec.group", "Required value", "FieldValueRequired")
    elif "." not in group:
        cause("spec.group", f'Invalid value: "{group}": should be a domain with at least one dot')
    if not plural:
        cause("spec.names.plural", "Required value", "FieldValueRequired")
    elif plural != plural.lower():
        cause(
            "spec.names.plural",
            f'Invalid value: "{plural}": a lowercase RFC 1123 label must consist of '
            "lower case alphanumeric characters or '-'",
        )
    if not names.get("kind"):
        cause("spec.names.kind", "Required value", "FieldValueRequired")
    if not names.get("listKind") and names.get("kind"):
        pass  # defaulted to <Kind>List
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        cause(
            "spec.scope",
            f'Unsupported value: "{spec.get("scope", "")}": supported values: "Cluster", "Namespaced"',
            "FieldValueNotSupported",
        )
    expected = f"{plural}.{group}"
    name = meta(crd).get("name", "")
    if plural and group and name != expected:
        cause("metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
    versions = spec.get("versions") or []
    if not versions:
        cause("spec.versions", "Invalid value: null: must have exactly one version marked as storage version")
    elif sum(1 for v in versions if v.get("storage")) != 1:
        cause(
            "spec.versions",
            "Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: "
            "must have exactly one version marked as storage version",
        )
    if old is not None and (old.get("status") or {}).get("storedVersions"):
        old_spec = old.get("spec") or {}
        for field in ("scope", "group"):
            if spec.get(field) != old_spec.get(field):
                cause(f"spec.{field}", f'Invalid value: "{spec.get(field) or ""}": field is immutable')
    for index, version in enumerate(versions):
        if not version.get("name"):
            cause(f"spec.versions[{index}].name", "Required value", "FieldValueRequired")
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            cause(
                f"spec.versions[{index}].schema.openAPIV3Schema",
                "Required value: schemas are required",
                "FieldValueRequired",
            )
    return causes


def crd_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a CRD serves: one per served version."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec.get("versions", []) if v.get("served", True)]
    storage = next((v["name"] for v in spec.get("versions", []) if v.get("storage")), versions[0]["name"])
    preferred = _preferred_version([v["name"] for v in versions])
    types = []
    for version in versions:
        sub = version.get("subresources") or {}
        scale_spec = sub.get("scale")
        scale = None
        if scale_spec is not None:
            scale = ScalePaths(
                scale_spec.get("specReplicasPath", ".spec.replicas"),
                scale_spec.get("statusReplicasPath", ".status.replicas"),
                scale_spec.get("labelSelectorPath"),
            )
        columns = tuple(
            PrinterColumn(
                c["name"],
                c.get("type", "string"),
                c["jsonPath"],
                c.get("description", ""),
                c.get("priority", 0),
                c.get("format", ""),
            )
            for c in version.get("additionalPrinterColumns") or ()
        )
        if not any(c.name == "Age" for c in columns):
            columns += (PrinterColumn("Age", "date", ".metadata.creationTimestamp"),)
        subresources = frozenset(k for k in ("status", "scale") if k in sub)
        selectable = frozenset(f["jsonPath"].lstrip(".") for f in version.get("selectableFields") or ())
        types.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                singular=names.get("singular") or names["kind"].lower(),
                namespaced=spec["scope"] == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subresources,
                has_generation=True,
                custom=True,
                unconditional_update=False,
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=columns,
                field_selectors=selectable,
                scale=scale,
                storage_version=storage,
                preferred=version["name"] == preferred,
                deprecation_warning=_deprecation_warning(spec["group"], version, names["kind"]),
            )
        )
    return types


def _deprecation_warning(group: str, version: Mapping[str, Any], kind: str) -> str:
    """The warning of a deprecated version: the CRD's own text, or the apiserver's default one."""
    if not version.get("deprecated"):
        return ""
    return str(version.get("deprecationWarning") or f"{group}/{version['name']} {kind} is deprecated")


def _version_priority(name: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first, others last by name."""
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if not match:
        return (3, 0, 0, name)
    major, stage, minor = int(match.group(1)), match.group(2), int(match.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, name)


def _preferred_version(names: list[str]) -> str:
    return sorted(names, key=_version_priority)[0]


def _names(crd: Mapping[str, Any]) -> JsonDict:
    names = dict((crd.get("spec") or {}).get("names") or {})
    names["singular"] = names.get("singular") or str(names.get("kind", "")).lower()
    names["listKind"] = names.get("listKind") or f"{names.get('kind', '')}List"
    return names


def name_conflict(crd: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> tuple[str, str] | None:
    """Why the names of a CRD cannot be accepted: another CRD of its group uses them (reason, message)."""
    group = (crd.get("spec") or {}).get("group")
    names = _names(crd)
    for other in others:
        if (other.get("spec") or {}).get("group") != group or meta(other).get("name") == meta(crd).get("name"):
            continue
        taken = (other.get("status") or {}).get("acceptedNames") or {}
        if not taken:
            continue
        taken_names = {taken.get("plural"), taken.get("singular"), *(taken.get("shortNames") or ())}
        for reason, value in (("PluralConflict", names.get("plural")), ("SingularConflict", names["singular"])):
            if value in taken_names:
                return reason, f'"{value}" is already in use'
        for short in names.get("shortNames") or ():
            if short in taken_names:
                return "ShortNamesConflict", f'"{short}" is already in use'
        if names.get("kind") in (taken.get("kind"), taken.get("listKind")):
            return "KindConflict", f'"{names.get("kind")}" is already in use'
        if names["listKind"] in (taken.get("kind"), taken.get("listKind")):
            return "ListKindConflict", f'"{names["listKind"]}" is already in use'
    return None


def is_established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def established_status(crd: Mapping[str, Any], now: str, conflict: tuple[str, str] | None = None) -> JsonDict:
    """The status the apiextensions controllers give a CRD: established, or its names refused for a conflict."""
    if conflict is not None:
        reason, message = conflict
        old = crd.get("status") or {}
        return {
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "False",
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                },
                {
                    "type": "Established",
                    "status": "False",
                    "lastTransitionTime": now,
                    "reason": "NotAccepted",
                    "message": "not all names are accepted",
                },
            ],
            "acceptedNames": dict(old.get("acceptedNames") or {"plural": "", "kind": ""}),
            "storedVersions": list(old.get("storedVersions") or []),
        }
    spec = crd["spec"]
    names = _names(crd)
    old = crd.get("status") or {}
    stored = list(old.get("storedVersions") or [])
    storage = next((v["name"] for v in spec.get("versions", []) if v.get("storage")), None)
    if storage and storage not in stored:
        stored.append(storage)
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "NoConflicts",
            "message": "no conflicts found",
        },
        {
            "type": "Established",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        },
    ]
    previous = {c.get("type"): c for c in old.get("conditions") or ()}
    for condition in conditions:
        if condition["type"] in previous and previous[condition["type"]].get("status") == "True":
            condition["lastTransitionTime"] = previous[condition["type"]]["lastTransitionTime"]
    return {"conditions": conditions, "acceptedNames": names, "storedVersions": stored}


def terminating_condition(now: str) -> JsonDict:
    return {
        "type": "Terminating",
        "status": "True",
        "lastTransitionTime": now,
        "reason": "InstanceDeletionInProgress",
        "message": "CustomResource deletion is in progress",
    }
