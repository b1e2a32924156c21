"""CRD validation rules (``x-kubernetes-validations``): compiled once per schema, evaluated on every write.

Each rule sits on a node of the schema and sees that node's value as ``self`` (and, in a transition rule, the
stored value as ``oldSelf``). Most writes are valid: each rule is first tried in Python (:mod:`.native`), which
converts nothing and can only confirm that a rule passes. Where it cannot, the bindings decide: converting
values into them costs more than most rules do, so the rules are grouped by their anchor: the deepest node on
their path that exists once per object (``spec``, ``spec.replicas``; a rule on list items is anchored at the
list). Each anchor's value is converted once, and one call of one program lists the verdicts of all its rules:
true when every instance of the rule's node passes. Only a rule that does not pass is evaluated again,
instance by instance, to name the failing field and word its message as the apiserver's CEL validator does:
``field.Invalid(<path>, <schema type>, <message>)``, printed as ``spec.replicas: Invalid value: "integer": <message>``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping
from typing import Any

from kopf_sim.cel.checks import MESSAGE_VARIABLES, RULE_VARIABLES
from kopf_sim.cel.library import FUNCTIONS
from kopf_sim.cel.native import NativeRule, Undecided, compile_native
from kopf_sim.cel.programs import (
    CompileError,
    compile_expression,
    evaluation_error,
    fields_read,
    for_evaluation,
    load_bindings,
)
from kopf_sim.cel.walking import MISSING, Schema, Step, anchor_of, instances, nodes, value_at, visible_root

__all__ = ["RuleFailure", "RuleSet", "rules_of"]


@dataclasses.dataclass(frozen=True)
class RuleFailure:
    """One cause of a 422 Invalid, in the wire form of ``Status.details.causes``."""

    field: str
    reason: str
    message: str


@dataclasses.dataclass(frozen=True)
class Rule:
    """One compiled entry of ``x-kubernetes-validations``, with the node it sits on."""

    steps: tuple[Step, ...]
    schema_type: str
    source: str
    message: str
    field_path: str
    reason: str
    program: Any
    message_program: Any | None
    transition: bool
    anchored_source: str | None  # the rule over its anchor's value; None if only the slow path can correlate
    fields: frozenset[str] | None  # the only fields of its anchor's value that it reads, if known
    native: NativeRule | None  # the rule in Python, to confirm passes without the bindings (see .native)
    names: tuple[str, ...]  # the fields down to its node, if there are only fields on the way (else empty)

    def passes_natively(self, root: Any, old_root: Any) -> bool:
        """Whether the rule surely passes on every instance of its node; Undecided if Python cannot tell."""
        native = self.native
        if native is None:
            raise Undecided
        if self.names or not self.steps:  # one instance at most: no walking
            value = value_at(root, self.names)
            if not self.transition:
                return value is MISSING or native({"self": value})
            old_value = MISSING if old_root is None else value_at(old_root, self.names)
            return value is MISSING or old_value is MISSING or native({"self": value, "oldSelf": old_value})
        for _, value, old_value in instances(self.steps, root, old_root, required=self.transition):
            if not native({"self": value, "oldSelf": old_value} if self.transition else {"self": value}):
                return False
        return True


def _all_pass_natively(rules: list[Rule], root: Any, old_root: Any) -> bool:
    """Whether all these rules surely pass, told in Python (False: the bindings must tell)."""
    try:
        return all(rule.passes_natively(root, old_root) for rule in rules)
    except Undecided:
        return False


class Anchor:
    """The rules anchored at one node; a context of the bindings kept for it, refilled on every write.

    A context per anchor, since the bindings convert all of a context's variables whenever one changes.
    """

    def __init__(self, names: tuple[str, ...], rules: list[Rule], functions: dict[str, Any]) -> None:
        self.names = names
        self.rules = rules
        fast = [rule for rule in rules if rule.anchored_source is not None]
        self.on_create = [rule for rule in fast if not rule.transition]
        self.on_update = fast
        self.create_program = _listing(self.on_create)
        self.update_program = _listing(fast)
        self.transitions = len(self.on_create) < len(fast)
        self.slow_only = [rule for rule in rules if rule.anchored_source is None]
        self.context = load_bindings().Context(functions=functions)
        fields = [rule.fields for rule in rules]
        self.fields = None if None in fields else frozenset().union(*(f for f in fields if f is not None))

    def verdicts(self, value: Any, old: Any) -> list[tuple[Rule, bool | None]]:
        """Each rule's verdict from one call: True if every instance passes, None if the call failed.

        ``old`` is the stored value for the transition rules, or MISSING (then they are not evaluated).
        """
        if self.fields is not None and type(value) is dict:  # less to convert
            value = {key: value[key] for key in self.fields if key in value}
            if type(old) is dict:
                old = {key: old[key] for key in self.fields if key in old}
        updating = old is not MISSING
        rules, program = (self.on_update, self.update_program) if updating else (self.on_create, self.create_program)
        if program is None:
            return []
        self.context.add_variable("self", value)
        if updating:
            self.context.add_variable("oldSelf", old)
        try:
            results = program.execute(self.context)
        except Exception:  # one rule's error fails the list: each rule is then evaluated on its own
            return [(rule, None) for rule in rules]
        return [(rule, result is True) for rule, result in zip(rules, results, strict=True)]


class RuleSet:
    """The compiled rules of one schema (one CRD version at one generation), reused for every write."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.rules: list[Rule] = []
        for steps, _, node in nodes(schema):
            for entry in node.get("x-kubernetes-validations") or ():
                try:
                    self.rules.append(_compile_rule(steps, node, entry))
                except CompileError:
                    continue  # the CRD was rejected for it at creation; hand-made types may still carry it
        functions = _referenced_functions(self.rules)
        by_anchor: dict[tuple[str, ...], list[Rule]] = {}
        for rule in self.rules:
            by_anchor.setdefault(anchor_of(rule.steps), []).append(rule)
        self.anchors = [Anchor(names, rules, functions) for names, rules in by_anchor.items()]
        self.creating = [rule for anchor in self.anchors for rule in anchor.on_create]  # transitions need old
        self._numbers = any(node.get("type") == "number" for _, _, node in nodes(schema))
        self._lock = threading.Lock()

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[RuleFailure]:
        """The failures of the object's rules; ``old`` is the stored object on updates, for transition rules."""
        root, old_root = self._cel_value(visible_root(obj)), None if old is None else self._cel_value(visible_root(old))
        if _all_pass_natively(self.rules if old_root is not None else self.creating, root, old_root):
            return []  # the usual answer, without converting anything into the bindings
        failing: list[Rule] = []
        with self._lock:
            for anchor in self.anchors:
                value = value_at(root, anchor.names)
                creating = old_root is None
                if value is MISSING or _all_pass_natively(
                    anchor.on_create if creating else anchor.rules, root, old_root
                ):
                    continue
                old_value = MISSING
                if anchor.transitions and old_root is not None:
                    old_value = value_at(old_root, anchor.names)
                failing += [rule for rule, verdict in anchor.verdicts(value, old_value) if verdict is not True]
                if old_root is not None:
                    failing += anchor.slow_only
        failures: list[RuleFailure] = []
        for rule in failing:
            failures += _evaluate_each(rule, root, old_root)
        return failures

    def _cel_value(self, value: Any) -> Any:
        """JSON as CEL sees it under the schema: integers in ``number`` fields are doubles."""
        return _with_doubles(value, self.schema) if self._numbers else value


def _listing(rules: list[Rule]) -> Any:
    """One program that lists the rules' verdicts."""
    if not rules:
        return None
    return load_bindings().compile("[" + ", ".join(str(rule.anchored_source) for rule in rules) + "]")


def _evaluate_each(rule: Rule, root: Any, old_root: Any) -> list[RuleFailure]:
    """The slow path: the rule on each instance of its node, with the failures worded."""
    cel = load_bindings()
    failures: list[RuleFailure] = []
    for path, value, old_value in instances(rule.steps, root, old_root, required=rule.transition):
        variables = {"self": value, "oldSelf": old_value} if rule.transition else {"self": value}
        context = cel.Context(variables=variables, functions=FUNCTIONS)
        failure: RuleFailure | None
        try:
            passed = rule.program.execute(context)
        except Exception as exc:  # the bindings raise assorted built-in errors
            failure = _failure(rule, path, evaluation_error(exc), reason="FieldValueInvalid")
        else:
            failure = None if passed is True else _failure(rule, path, _message(rule, context))
        if failure is not None and not (old_value is not MISSING and old_value == value):
            failures.append(failure)  # an unchanged value is not held against its rules (ratcheting)
    return failures


def _message(rule: Rule, context: Any) -> str:
    if rule.message_program is not None:
        try:
            text = rule.message_program.execute(context)
        except Exception:  # a failing messageExpression falls back, as the apiserver's does
            text = None
        if isinstance(text, str) and text.strip():
            return text
    return rule.message or f"failed rule: {rule.source}"


def _failure(rule: Rule, path: str, detail: str, *, reason: str | None = None) -> RuleFailure:
    field = _append_field_path(path, rule.field_path)
    reason = reason or rule.reason
    type_text = json.dumps(rule.schema_type)
    if reason == "FieldValueRequired":
        return RuleFailure(field, reason, f"Required value: {detail}")
    if reason == "FieldValueForbidden":
        return RuleFailure(field, reason, f"Forbidden: {detail}")
    if reason == "FieldValueDuplicate":
        return RuleFailure(field, reason, f"Duplicate value: {type_text}")
    return RuleFailure(field, "FieldValueInvalid", f"Invalid value: {type_text}: {detail}")


def _append_field_path(path: str, field_path: str) -> str:
    """The rule's path with its ``fieldPath`` (``.spec.x``, ``['a.b']``, ``[0]``) appended."""
    text = path
    for name in _field_path_parts(field_path):
        text = f"{text}[{name}]" if name.isdigit() else (f"{text}.{name}" if text else name)
    return text or "<nil>"


def _field_path_parts(field_path: str) -> list[str]:
    parts: list[str] = []
    rest = field_path.strip()
    while rest:
        if rest.startswith("."):
            name = rest[1:].split(".", 1)[0].split("[", 1)[0]
            rest = rest[1 + len(name) :]
        elif rest.startswith("['") and "']" in rest:
            name, rest = rest[2:].split("']", 1)
        elif rest.startswith("[") and "]" in rest:
            name, rest = rest[1:].split("]", 1)
        else:
            break
        parts.append(name)
    return parts


# --- compiling ----------------------------------------------------------------------------------------------


def _compile_rule(steps: tuple[Step, ...], node: Schema, entry: Mapping[str, Any]) -> Rule:
    source = str(entry["rule"])
    transition = "oldSelf" in compile_expression(source, RULE_VARIABLES).variables()
    program = load_bindings().compile(for_evaluation(source))
    expression = entry.get("messageExpression")
    inner = steps[len(anchor_of(steps)) :]
    return Rule(
        steps=steps,
        schema_type="int-or-string" if node.get("x-kubernetes-int-or-string") else str(node.get("type") or "object"),
        source=source,
        message=str(entry.get("message") or ""),
        field_path=str(entry.get("fieldPath") or ""),
        reason=str(entry.get("reason") or "FieldValueInvalid"),
        program=program,
        message_program=compile_expression(expression, MESSAGE_VARIABLES) if expression else None,
        transition=transition,
        anchored_source=None if transition and inner else _over(inner, for_evaluation(source), depth=0),
        fields=None if inner else fields_read(source),
        native=compile_native(source),
        names=anchor_of(steps) if not inner else (),
    )


def _over(steps: tuple[Step, ...], body: str, *, depth: int) -> str:
    """The rule over every instance below the anchor (``self``): true when all of them pass."""
    if not steps:
        return f"({body})"
    kind, variable = steps[0][0], f"kopfItem{depth}"
    inner = _over(steps[1:], body, depth=depth + 1)
    if kind == "field":
        key = json.dumps(steps[0][1])
        return f"(!({key} in self) || self[{key}] == null || [self[{key}]].all(self, {inner}))"
    if kind == "values":
        return f"self.all({variable}, [self[{variable}]].all(self, {inner}))"
    return f"self.all(self, {inner})"


def _referenced_functions(rules: list[Rule]) -> dict[str, Any]:
    """The library functions that the rules call: the fewer, the cheaper each conversion of a context."""
    names: set[str] = set()
    for rule in rules:
        for program in (rule.program, rule.message_program):
            if program is not None:
                names.update(program.functions())
    return {name: function for name, function in FUNCTIONS.items() if name in names}


def _with_doubles(value: Any, schema: Schema) -> Any:
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        extra = additional if isinstance(additional, Mapping) else {}
        return {key: _with_doubles(item, properties.get(key, extra)) for key, item in value.items()}
    if isinstance(value, list):
        items = schema.get("items")
        return [_with_doubles(item, items if isinstance(items, Mapping) else {}) for item in value]
    return value


# --- the cache: compiled once per CRD generation -------------------------------------------------------------

_CACHE: dict[int, RuleSet] = {}
_CACHE_LIMIT = 256


def rules_of(schema: Schema) -> RuleSet | None:
    """The compiled rules of a schema (None if it has none), compiled on first use of this schema object.

    A CRD's schema object lives as long as its generation's resource type: a new generation brings a new
    schema object, hence a fresh compilation; older entries are dropped in the order they were compiled.
    """
    cached = _CACHE.get(id(schema))
    if cached is not None and cached.schema is schema:
        return cached if cached.rules else None
    rule_set = RuleSet(schema)
    if len(_CACHE) >= _CACHE_LIMIT:
        del _CACHE[next(iter(_CACHE))]
    _CACHE[id(schema)] = rule_set
    return rule_set if rule_set.rules else None
