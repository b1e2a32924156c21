"""ValidatingAdmissionPolicy and its bindings (admissionregistration.k8s.io/v1): CEL validations in the apiserver.

Each binding of a policy that matches a write (the policy's ``matchConstraints``, the binding's
``matchResources``, then the policy's ``matchConditions``) evaluates the policy's ``validations`` with
``object``, ``oldObject``, ``request``, ``params`` (the binding's ``paramRef`` to an object of the policy's
``paramKind``), ``namespaceObject`` and ``variables``. A failed validation acts as the binding's
``validationActions`` say: ``Deny`` refuses the write, ``Warn`` sends a warning that kubectl prints,
``Audit`` records it (with the ``auditAnnotations``) in :attr:`ValidatingPolicies.audit`. The policies run
before the validating webhooks, as in the apiserver; the texts are the apiserver's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from kopf_sim.admission.attributes import Attributes, StoreView
from kopf_sim.admission.conditions import admission_request, authorizer_of, evaluate_conditions
from kopf_sim.admission.matching import rule_matches
from kopf_sim.cel.expressions import CompileError, EvaluationError, expression
from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.selectors import LabelSelector

__all__ = ["AuditRecord", "ValidatingPolicies"]

GROUP = "admissionregistration.k8s.io"
POLICIES = (GROUP, "validatingadmissionpolicies")
BINDINGS = (GROUP, "validatingadmissionpolicybindings")
VARIABLES = frozenset({"object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer"})
_CODES = {"Unauthorized": 401, "Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """What a policy's ``Audit`` action (and its ``auditAnnotations``) left for the audit log of a request."""

    policy: str
    binding: str
    message: str | None  # the failed validation's message; None for annotations of a passing request
    annotations: Mapping[str, str]


class _Failure(Exception):
    """A validation failed or could not be evaluated: its message and the status reason of a denial."""

    def __init__(self, message: str, reason: str = "Invalid") -> None:
        super().__init__(message)
        self.message, self.reason = message, reason


class ValidatingPolicies:
    """The validating plugin of the admission chain for ValidatingAdmissionPolicies (see the module)."""

    configured_by = frozenset({BINDINGS})  # (active while a binding is stored)

    def __init__(self, store: StoreView) -> None:
        self.store = store
        #: The audit records of the ``Audit`` actions and audit annotations, in the order of the requests.
        self.audit: list[AuditRecord] = []

    def active(self) -> bool:
        return self.store.count(BINDINGS) > 0

    async def validate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> None:
        for binding, policy in self._bindings():
            self._apply(binding, policy, attrs, obj, old, warnings)

    def _bindings(self) -> Iterator[tuple[JsonDict, JsonDict]]:
        policies = {meta(p).get("name"): p for p in self.store.objects(POLICIES)}
        for binding in sorted(self.store.objects(BINDINGS), key=lambda b: str(meta(b).get("name"))):
            policy = policies.get((binding.get("spec") or {}).get("policyName"))
            if policy is not None:
                yield binding, policy

    def _apply(
        self, binding: JsonDict, policy: JsonDict, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None,
        warnings: list[str],
    ) -> None:  # fmt: skip
        spec, binding_spec = policy.get("spec") or {}, binding.get("spec") or {}
        subject = obj if obj is not None else old
        if not self._matches(spec.get("matchConstraints"), attrs, subject) or not self._matches(
            binding_spec.get("matchResources"), attrs, subject, empty_matches=True
        ):
            return
        names = (str(meta(policy).get("name")), str(meta(binding).get("name")))
        actions = binding_spec.get("validationActions") or ["Deny"]
        fail_closed = spec.get("failurePolicy", "Fail") != "Ignore"
        failures: list[_Failure] = []
        try:
            for params in self._params(spec, binding_spec, attrs):
                values = self._values(attrs, obj, old, params)
                if self._conditions_hold(spec, values, fail_closed=fail_closed):
                    failures += self._evaluate(spec, values, names)
        except _Failure as error:  # an expression that could not be evaluated, or a binding without its params
            if error.reason == "configuration":
                self._act(error, names, ["Deny"], warnings, attrs)
            elif fail_closed:
                failures.append(error)
        for failure in failures:
            self._act(failure, names, actions, warnings, attrs)

    # -- matching -----------------------------------------------------------------------------------------------

    def _matches(
        self, constraints: Any, attrs: Attributes, subject: JsonDict | None, *, empty_matches: bool = False
    ) -> bool:
        if not isinstance(constraints, Mapping):
            return empty_matches
        rules = constraints.get("resourceRules") or []
        if rules and not any(rule_matches(rule, attrs, attrs.rtype) for rule in rules):
            return False
        if not rules and not empty_matches:
            return False
        if any(rule_matches(rule, attrs, attrs.rtype) for rule in constraints.get("excludeResourceRules") or ()):
            return False
        objects = LabelSelector.from_spec(constraints.get("objectSelector"))
        if not objects.empty and not (subject is not None and objects.matches(meta(subject).get("labels"))):
            return False
        namespaces = LabelSelector.from_spec(constraints.get("namespaceSelector"))
        if not namespaces.empty and attrs.namespace:
            namespace = self.store.peek(("", "namespaces"), None, attrs.namespace)
            return namespaces.matches(meta(namespace).get("labels") if namespace is not None else None)
        return True

    def _params(self, spec: Mapping[str, Any], binding_spec: Mapping[str, Any], attrs: Attributes) -> list[Any]:
        """The params objects of the binding (one evaluation each), or ``[None]`` without a ``paramKind``."""
        kind, ref = spec.get("paramKind"), binding_spec.get("paramRef")
        if not isinstance(kind, Mapping) or not isinstance(ref, Mapping):
            return [None]
        api_version = str(kind.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        rtype = next(
            (
                t
                for t in self.store.catalogue
                if t.group == group and t.version == version and t.kind == kind.get("kind")
            ),
            None,
        )
        found: list[Any] = []
        if rtype is not None:
            namespace = (ref.get("namespace") or attrs.namespace) if rtype.namespaced else None
            if ref.get("name"):
                param = self.store.peek(rtype.storage_key, namespace, str(ref["name"]))
                found = [param] if param is not None else []
            else:
                selector = LabelSelector.from_spec(ref.get("selector"))
                found = [
                    o
                    for o in self.store.objects(rtype.storage_key, namespace)
                    if selector.matches(meta(o).get("labels"))
                ]
        if found:
            return found
        if ref.get("parameterNotFoundAction") == "Allow":
            return []
        raise _Failure(
            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
            "configuration",
        )

    # -- evaluating ---------------------------------------------------------------------------------------------

    def _values(self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, params: Any) -> dict[str, Any]:
        namespace = self.store.peek(("", "namespaces"), None, attrs.namespace) if attrs.namespace else None
        return {
            "object": obj,
            "oldObject": old,
            "request": admission_request(attrs, attrs.gvk, attrs.rtype),
            "params": params,
            "namespaceObject": namespace,
            "variables": {},
            "authorizer": authorizer_of(attrs),
        }

    def _conditions_hold(self, spec: Mapping[str, Any], values: dict[str, Any], *, fail_closed: bool) -> bool:
        """The policy's ``variables`` evaluated, then its ``matchConditions`` (see :mod:`.conditions`)."""
        for variable in spec.get("variables") or ():
            values["variables"] = {
                **values["variables"],
                str(variable.get("name")): self._run(variable.get("expression"), values),
            }
        conditions = spec.get("matchConditions") or ()
        verdict = evaluate_conditions(conditions, values, VARIABLES, fail_closed=fail_closed)
        if verdict.error is not None:
            raise _Failure(verdict.error)
        return verdict.matches

    def _evaluate(self, spec: Mapping[str, Any], values: dict[str, Any], names: tuple[str, str]) -> list[_Failure]:
        """The failed validations; the audit annotations of the request are recorded."""
        failed: list[_Failure] = []
        for validation in spec.get("validations") or ():
            source = str(validation.get("expression", ""))
            if self._run(source, values) is True:
                continue
            message = _message_of(validation, values, self._run_quietly) or f"failed expression: {source}"
            failed.append(_Failure(message, str(validation.get("reason") or "Invalid")))
        annotations = {
            f"{names[0]}/{a.get('key')}": value
            for a in spec.get("auditAnnotations") or ()
            if isinstance(value := self._run_quietly(a.get("valueExpression"), values), str)
        }
        if annotations:
            self.audit.append(AuditRecord(names[0], names[1], None, annotations))
        return failed

    def _run(self, source: Any, values: Mapping[str, Any]) -> Any:
        try:
            return expression(str(source or ""), VARIABLES).evaluate(values)
        except (CompileError, EvaluationError) as exc:
            raise _Failure(f"expression '{source}' resulted in error: {exc}") from None

    def _run_quietly(self, source: Any, values: Mapping[str, Any]) -> Any:
        try:
            return self._run(source, values)
        except _Failure:
            return None

    def _act(
        self, failure: _Failure, names: tuple[str, str], actions: list[str], warnings: list[str], attrs: Attributes
    ) -> None:
        """A failure as the binding's actions say: a warning, an audit record, a denial (raised)."""
        message = f"ValidatingAdmissionPolicy '{names[0]}' with binding '{names[1]}' denied request: {failure.message}"
        if "Warn" in actions:
            warning = f"Validation failed for ValidatingAdmissionPolicy '{names[0]}' with binding '{names[1]}': "
            warnings.append(warning + failure.message)
        if "Audit" in actions:
            self.audit.append(AuditRecord(names[0], names[1], failure.message, {}))
        if "Deny" not in actions:
            return
        reason = failure.reason if failure.reason in _CODES else "Invalid"
        details: dict[str, Any] = {"name": attrs.name} if attrs.name else {}
        if attrs.rtype.group:
            details["group"] = attrs.rtype.group
        details["kind"] = attrs.rtype.plural
        if reason == "Invalid":
            details["causes"] = [{"message": message, "field": ""}]
        raise errors.ApiError(_CODES[reason], reason, message, details=details)


def _message_of(validation: Mapping[str, Any], values: Mapping[str, Any], run: Any) -> str:
    expression_text = validation.get("messageExpression")
    if expression_text:
        text = run(expression_text, values)
        if isinstance(text, str) and text.strip() and "\n" not in text:
            return text
    return str(validation.get("message") or "")
