"""Why the apiserver rejects a CRD's validation rules at creation: compilation, reasons, ``oldSelf``, cost.

Nothing of such a CRD is stored. The texts are the apiserver's, including Go's ``%#v`` rendering of the
rule in ``Invalid value: apiextensions.ValidationRule{…}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kopf_sim.cel import costs
from kopf_sim.cel.programs import CompileError, compile_expression
from kopf_sim.cel.walking import Schema, Step, nodes
from kopf_sim.kube.objects import qualified_name_problems

__all__ = [
    "MESSAGE_VARIABLES",
    "REASONS",
    "RULE_VARIABLES",
    "WEBHOOK_CONDITION_VARIABLES",
    "crd_rule_problems",
    "match_condition_problems",
]

RULE_VARIABLES = frozenset({"self", "oldSelf"})
MESSAGE_VARIABLES = RULE_VARIABLES
REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
COST_ADVICE = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
    "strings are declared)"
)


def crd_rule_problems(crd: Mapping[str, Any]) -> list[dict[str, str]]:
    """The causes for which the apiserver rejects a CRD's validation rules (compilation, reasons, cost)."""
    versions = [v for v in (crd.get("spec") or {}).get("versions") or () if isinstance(v, Mapping)]
    schemas = [(v.get("schema") or {}).get("openAPIV3Schema") for v in versions]
    if not any(_has_rules(s) for s in schemas if isinstance(s, Mapping)):
        return []
    # With one schema for all versions, the apiserver's internal form holds it as spec.validation.
    shared = all(s == schemas[0] for s in schemas)
    problems: list[dict[str, str]] = []
    for index, schema in enumerate(schemas[:1] if shared else schemas):
        if isinstance(schema, Mapping):
            base = "spec.validation.openAPIV3Schema" if shared else f"spec.versions[{index}].schema.openAPIV3Schema"
            problems += _schema_problems(schema, base)
    return problems


def _has_rules(schema: Schema) -> bool:
    return any(node.get("x-kubernetes-validations") for _, _, node in nodes(schema))


def _schema_problems(schema: Schema, base: str) -> list[dict[str, str]]:
    problems: list[dict[str, str]] = []
    for steps, path, node in nodes(schema):
        for index, entry in enumerate(node.get("x-kubernetes-validations") or ()):
            at = f"{base}{path}.x-kubernetes-validations[{index}]"
            if not isinstance(entry, Mapping):
                problems.append(
                    _cause(at, "FieldValueInvalid", f"Invalid value: {json.dumps(entry)}: must be an object")
                )
                continue
            problems += _entry_problems(schema, steps, entry, at)
    return problems


def _entry_problems(schema: Schema, steps: tuple[Step, ...], entry: Mapping[str, Any], at: str) -> list[dict[str, str]]:
    source = entry.get("rule")
    if not isinstance(source, str) or not source.strip():
        return [_cause(f"{at}.rule", "FieldValueRequired", "Required value: rule is not specified")]
    problems: list[dict[str, str]] = []
    value = _go_rule_value(entry)
    try:
        program = compile_expression(source, RULE_VARIABLES)
    except CompileError as exc:
        problems.append(_cause(f"{at}.rule", "FieldValueInvalid", f"Invalid value: {value}: compilation failed: {exc}"))
    else:
        excess = costs.excess_factor(source, schema, steps)
        if excess is not None:
            detail = f"estimated rule cost exceeds budget by factor of {excess:.1f}x {COST_ADVICE}"
            problems.append(_cause(f"{at}.rule", "FieldValueForbidden", f"Forbidden: {detail}"))
        if "oldSelf" in program.variables() and any(kind == "items" for kind, _ in steps):
            detail = "oldSelf cannot be used on the uncorrelatable portion of the schema within " + _node_text(steps)
            problems.append(_cause(f"{at}.rule", "FieldValueInvalid", f"Invalid value: {value}: {detail}"))
    expression = entry.get("messageExpression")
    if isinstance(expression, str) and expression:
        try:
            compile_expression(expression, MESSAGE_VARIABLES)
        except CompileError as exc:
            detail = f"messageExpression compilation failed: {exc}"
            problems.append(_cause(f"{at}.messageExpression", "FieldValueInvalid", f"Invalid value: {value}: {detail}"))
    reason = entry.get("reason")
    if reason is not None and reason not in REASONS:
        supported = ", ".join(json.dumps(r) for r in REASONS)
        message = f"Unsupported value: {json.dumps(reason)}: supported values: {supported}"
        problems.append(_cause(f"{at}.reason", "FieldValueNotSupported", message))
    return problems


def _go_rule_value(entry: Mapping[str, Any]) -> str:
    """The rule as Go's ``%#v`` prints ``apiextensions.ValidationRule`` in the apiserver's messages."""
    reason = (
        "(*apiextensions.FieldValueErrorReason)(" + ("nil" if entry.get("reason") is None else "0xc0004a2e10") + ")"
    )
    optional = "(*bool)(" + ("nil" if entry.get("optionalOldSelf") is None else "0xc0004a2e18") + ")"
    return (
        f"apiextensions.ValidationRule{{Rule:{json.dumps(str(entry.get('rule', '')))}, "
        f"Message:{json.dumps(str(entry.get('message', '')))}, "
        f"MessageExpression:{json.dumps(str(entry.get('messageExpression', '')))}, "
        f"Reason:{reason}, FieldPath:{json.dumps(str(entry.get('fieldPath', '')))}, OptionalOldSelf:{optional}}}"
    )


def _node_text(steps: tuple[Step, ...]) -> str:
    return "".join(f".{name}" if kind == "field" else "[*]" for kind, name in steps) or "self"


def _cause(field: str, reason: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


POLICY_VARIABLES = frozenset({"object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer"})
_POLICY_EXPRESSIONS = (
    ("validations", "expression"),
    ("validations", "messageExpression"),
    ("matchConditions", "expression"),
    ("variables", "expression"),
    ("auditAnnotations", "valueExpression"),
)


def policy_problems(policy: Mapping[str, Any]) -> list[dict[str, str]]:
    """Why the apiserver rejects a ValidatingAdmissionPolicy: an expression of it that does not compile."""
    spec = policy.get("spec") or {}
    problems: list[dict[str, str]] = []
    for section, field in _POLICY_EXPRESSIONS:
        for index, entry in enumerate(spec.get(section) or ()):
            source = entry.get(field) if isinstance(entry, Mapping) else None
            if isinstance(source, str) and source:
                problems += _compilation_problems(source, POLICY_VARIABLES, f"spec.{section}[{index}].{field}")
    return problems


def _compilation_problems(source: str, variables: frozenset[str], field: str) -> list[dict[str, str]]:
    """The cause of an expression that does not compile, as the apiserver words it (none if it compiles)."""
    try:
        compile_expression(source, variables)
    except CompileError as exc:
        message = f"Invalid value: {json.dumps(source)}: compilation failed: {exc}"
        return [_cause(field, "FieldValueInvalid", message)]
    return []


WEBHOOK_CONDITION_VARIABLES = frozenset({"object", "oldObject", "request", "authorizer"})
MAX_MATCH_CONDITIONS = 64


def match_condition_problems(conditions: Any, path: str) -> list[dict[str, str]]:
    """Why the apiserver rejects a webhook's ``matchConditions``: names, expressions that do not compile, count."""
    if not isinstance(conditions, list):
        return []
    problems: list[dict[str, str]] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        message = f"Too many: {len(conditions)}: must have at most {MAX_MATCH_CONDITIONS} items"
        problems.append(_cause(path, "FieldValueTooMany", message))
    names: set[str] = set()
    for index, condition in enumerate(conditions):
        where = f"{path}[{index}]"
        entry = condition if isinstance(condition, Mapping) else {}
        name, source = entry.get("name"), entry.get("expression")
        if not name:
            problems.append(_cause(f"{where}.name", "FieldValueRequired", "Required value"))
        elif str(name) in names:
            problems.append(_cause(f"{where}.name", "FieldValueDuplicate", f"Duplicate value: {json.dumps(name)}"))
        else:
            names.add(str(name))
            for problem in qualified_name_problems(str(name)):
                message = f"Invalid value: {json.dumps(name)}: {problem}"
                problems.append(_cause(f"{where}.name", "FieldValueInvalid", message))
        if not isinstance(source, str) or not source:
            problems.append(_cause(f"{where}.expression", "FieldValueRequired", "Required value"))
        else:
            problems += _compilation_problems(source, WEBHOOK_CONDITION_VARIABLES, f"{where}.expression")
    return problems
