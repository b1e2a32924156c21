"""The CRD's CEL validation rules as one more step of schema validation (kopf_sim.cel does the CEL).

The apiserver evaluates the rules after the structural schema, unless the object has a type error there: then it
does not evaluate them and says so. On updates, transition rules see the stored object, and a value that did not
change is not held against its rules (validation ratcheting, on by default since Kubernetes 1.30).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kopf_sim.cel import checks, rules
from kopf_sim.writes.schemas import FieldCause

__all__ = ["POLICIES", "causes", "crd_problems", "policy_problems"]

POLICIES = ("admissionregistration.k8s.io", "validatingadmissionpolicies")

NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def causes(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, schema: Mapping[str, Any], earlier: Sequence[FieldCause]
) -> list[FieldCause]:
    """The failures of the rules in the object's schema, after the schema's own ``earlier`` failures."""
    rule_set = rules.rules_of(schema)
    if rule_set is None:
        return []
    if any(cause.reason == "FieldValueTypeInvalid" for cause in earlier):
        return [FieldCause("FieldValueInvalid", f'Invalid value: "null": {NOT_CHECKED}', "<nil>")]
    return [FieldCause(f.reason, f.message, f.field) for f in rule_set.validate(obj, old)]


def crd_problems(crd: Mapping[str, Any]) -> list[dict[str, str]]:
    """Why the apiserver would reject the CRD's rules: compilation, reasons, the cost budget."""
    return checks.crd_rule_problems(crd)


def policy_problems(policy: Mapping[str, Any]) -> list[dict[str, str]]:
    """Why the apiserver would reject a ValidatingAdmissionPolicy: expressions that do not compile."""
    return checks.policy_problems(policy)
