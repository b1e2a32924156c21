"""CRD validation rules (``x-kubernetes-validations``): compiled once per schema, evaluated on every write.

Each rule sits on a node of the schema and sees that node's value as ``self`` (and, in a transition rule,
the stored value as ``oldSelf``). Evaluation takes two paths: a fast one asks the bindings, in one call per rule
over the whole object, whether every instance of the rule's node passes (the usual answer); only when one
does not, the slow path evaluates the instances one by one to name the failing field and word its message.

Failures are worded as the apiserver's CEL validator words them: ``field.Invalid(<path>, <schema type>,
<message>)``, printed as ``spec.replicas: Invalid value: "integer": <message>``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from kopf_sim.cel import costs
from kopf_sim.cel.library import FUNCTIONS
from kopf_sim.cel.programs import CompileError, compile_expression, evaluation_error, load_bindings

__all__ = ["RuleFailure", "RuleSet", "crd_rule_problems", "rules_of"]

Schema = Mapping[str, Any]
Step = tuple[str, str]  # ("field", name) | ("items", "") | ("values", "")

RULE_VARIABLES = frozenset({"self", "oldSelf"})
MESSAGE_VARIABLES = RULE_VARIABLES
REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_MISSING = object()


@dataclasses.dataclass(frozen=True)
class RuleFailure:
    """One cause of a 422 Invalid, in the wire form of ``Status.details.causes``."""

    field: str
    reason: str
    message: str

    def as_status_cause(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


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
    fast_program: Any | None  # over the whole object; None where only the slow path can correlate oldSelf


# --- where the rules are ------------------------------------------------------------------------------------


def _nodes(
    schema: Schema, steps: tuple[Step, ...] = (), path: str = ""
) -> Iterator[tuple[tuple[Step, ...], str, Schema]]:
    """Every node of the schema: its steps from the root, its path as the CRD's errors name it, the node."""
    yield steps, path, schema
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield from _nodes(sub, (*steps, ("field", key)), f"{path}.properties[{key}]")
    if isinstance(schema.get("items"), Mapping):
        yield from _nodes(schema["items"], (*steps, ("items", "")), f"{path}.items")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _nodes(schema["additionalProperties"], (*steps, ("values", "")), f"{path}.additionalProperties")


def _schema_type(node: Schema) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(node.get("type") or "object")


def _correlatable(steps: tuple[Step, ...]) -> bool:
    """May ``oldSelf`` reach this node? Through object fields and map values, not through list items."""
    return all(kind != "items" for kind, _ in steps)


# --- compiling, and the CRD's problems ---------------------------------------------------------------------


def _go_rule_value(entry: Mapping[str, Any]) -> str:
    """The rule as Go's ``%#v`` prints ``apiextensions.ValidationRule`` in the apiserver's messages."""
    reason = (
        "(*apiextensions.FieldValueErrorReason)(nil)"
        if entry.get("reason") is None
        else ("(*apiextensions.FieldValueErrorReason)(0xc0004a2e10)")
    )
    optional = "(*bool)(nil)" if entry.get("optionalOldSelf") is None else "(*bool)(0xc0004a2e18)"
    return (
        f"apiextensions.ValidationRule{{Rule:{json.dumps(str(entry.get('rule', '')))}, "
        f"Message:{json.dumps(str(entry.get('message', '')))}, "
        f"MessageExpression:{json.dumps(str(entry.get('messageExpression', '')))}, "
        f"Reason:{reason}, FieldPath:{json.dumps(str(entry.get('fieldPath', '')))}, OptionalOldSelf:{optional}}}"
    )


def crd_rule_problems(crd: Mapping[str, Any]) -> list[dict[str, str]]:
    """The causes for which the apiserver rejects a CRD's validation rules (compilation, reasons, cost)."""
    versions = [v for v in (crd.get("spec") or {}).get("versions") or () if isinstance(v, Mapping)]
    schemas = [((v.get("schema") or {}).get("openAPIV3Schema")) for v in versions]
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
    return any(node.get("x-kubernetes-validations") for _, _, node in _nodes(schema))


def _schema_problems(schema: Schema, base: str) -> list[dict[str, str]]:
    problems: list[dict[str, str]] = []
    for steps, path, node in _nodes(schema):
        for index, entry in enumerate(node.get("x-kubernetes-validations") or ()):
            at = f"{base}{path}.x-kubernetes-validations[{index}]"
            if not isinstance(entry, Mapping):
                problems.append(
                    _cause(at, "FieldValueInvalid", f"Invalid value: {json.dumps(entry)}: must be an object")
                )
                continue
            problems += _entry_problems(schema, steps, node, entry, at)
    return problems


def _entry_problems(
    schema: Schema, steps: tuple[Step, ...], node: Schema, entry: Mapping[str, Any], at: str
) -> list[dict[str, str]]:
    problems: list[dict[str, str]] = []
    value = _go_rule_value(entry)
    source = entry.get("rule")
    if not isinstance(source, str) or not source.strip():
        return [_cause(f"{at}.rule", "FieldValueRequired", "Required value: rule is not specified")]
    try:
        compile_expression(source, RULE_VARIABLES)
    except CompileError as exc:
        problems.append(_cause(f"{at}.rule", "FieldValueInvalid", f"Invalid value: {value}: compilation failed: {exc}"))
    else:
        excess = costs.excess_factor(source, schema, steps)
        if excess is not None:
            problems.append(
                _cause(
                    f"{at}.rule",
                    "FieldValueForbidden",
                    f"Forbidden: estimated rule cost exceeds budget by factor of {excess:.1f}x (try simplifying "
                    "the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings "
                    "are declared)",
                )
            )
    if "oldSelf" in source and not _correlatable(steps):
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


def _node_text(steps: tuple[Step, ...]) -> str:
    return "".join(f".{name}" if kind == "field" else "[*]" for kind, name in steps) or "self"


def _cause(field: str, reason: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


# --- the compiled rules of one schema ------------------------------------------------------------------------


class RuleSet:
    """The compiled rules of one schema (one CRD version at one generation), reused for every write."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.rules: list[Rule] = []
        for steps, _, node in _nodes(schema):
            for entry in node.get("x-kubernetes-validations") or ():
                try:
                    self.rules.append(_compile_rule(steps, node, entry))
                except CompileError:
                    continue  # the CRD was rejected for it at creation; a schema in hand-made types may still have it
        self._numbers = any(node.get("type") == "number" for _, _, node in _nodes(schema))
        self._lock = threading.Lock()
        self._context: Any = None

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[RuleFailure]:
        """The failures of the object's rules; ``old`` is the stored object on updates, for transition rules."""
        if not self.rules:
            return []
        root = self._cel_value(_visible_root(obj), self.schema)
        old_root = None if old is None else self._cel_value(_visible_root(old), self.schema)
        failures: list[RuleFailure] = []
        with self._lock:
            context = self._context_with(root, old_root)
            for rule in self.rules:
                if rule.transition and old_root is None:
                    continue
                if rule.fast_program is not None and _passes(rule.fast_program, context):
                    continue
                failures += self._slow(rule, root, old_root)
        return failures

    def _context_with(self, root: Any, old_root: Any) -> Any:
        if self._context is None:
            self._context = load_bindings().Context(functions=FUNCTIONS)
        self._context.add_variable("kopfRoot", root)
        self._context.add_variable("kopfOldRoot", old_root)
        return self._context

    def _cel_value(self, value: Any, schema: Schema) -> Any:
        """JSON as CEL sees it under the schema: integers in ``number`` fields are doubles."""
        return _with_doubles(value, schema) if self._numbers else value

    def _slow(self, rule: Rule, root: Any, old_root: Any) -> list[RuleFailure]:
        cel = load_bindings()
        failures: list[RuleFailure] = []
        for path, value, old_value in _instances(rule.steps, root, old_root, rule.transition):
            variables = {"self": value} if old_value is _MISSING else {"self": value, "oldSelf": old_value}
            context = cel.Context(variables=variables, functions=FUNCTIONS)
            try:
                passed = rule.program.execute(context)
            except Exception as exc:  # the bindings raise assorted built-in errors
                failures.append(_failure(rule, path, evaluation_error(exc), reason="FieldValueInvalid"))
                continue
            if passed is not True:
                failures.append(_failure(rule, path, _message(rule, context)))
        return failures


def _passes(program: Any, context: Any) -> bool:
    try:
        return program.execute(context) is True
    except Exception:  # the slow path reports the error of the failing instance
        return False


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


# --- compiling one rule ------------------------------------------------------------------------------------


def _compile_rule(steps: tuple[Step, ...], node: Schema, entry: Mapping[str, Any]) -> Rule:
    source = str(entry["rule"])
    program = compile_expression(source, RULE_VARIABLES)
    expression = entry.get("messageExpression")
    message_program = compile_expression(expression, MESSAGE_VARIABLES) if expression else None
    transition = "oldSelf" in program.variables()
    fast_source = _fast_source(source, steps, transition)
    return Rule(
        steps=steps,
        schema_type=_schema_type(node),
        source=source,
        message=str(entry.get("message") or ""),
        field_path=str(entry.get("fieldPath") or ""),
        reason=str(entry.get("reason") or "FieldValueInvalid"),
        program=program,
        message_program=message_program,
        transition=transition,
        fast_program=None if fast_source is None else load_bindings().compile(fast_source),
    )


def _fast_source(source: str, steps: tuple[Step, ...], transition: bool) -> str | None:
    """The rule over every instance of its node in the whole object: true when all pass."""
    if transition and not _correlatable(steps):
        return None
    body = f"[kopfOld].all(oldSelf, {source})" if transition else source
    return _over(steps, "kopfRoot", "kopfOldRoot" if transition else None, body, depth=0)


def _over(steps: tuple[Step, ...], current: str, old: str | None, body: str, *, depth: int) -> str:
    if not steps:
        inner = body.replace("[kopfOld]", f"[{old}]") if old is not None else body
        return f"[{current}].all(self, {inner})"
    (kind, name), rest = steps[0], steps[1:]
    if kind == "field":
        key = json.dumps(name)
        child, old_child = f"{current}[{key}]", None if old is None else f"{old}[{key}]"
        guard = f"!({key} in {current}) || {child} == null"
        if old is not None:
            guard += f" || !({key} in {old}) || {old_child} == null"
        return f"({guard} || {_over(rest, child, old_child, body, depth=depth + 1)})"
    variable = f"kopfItem{depth}"
    if kind == "items":
        return f"{current}.all({variable}, {_over(rest, variable, None, body, depth=depth + 1)})"
    old_value = None if old is None else f"{old}[{variable}]"
    inner = _over(rest, f"{current}[{variable}]", old_value, body, depth=depth + 1)
    if old is not None:
        inner = f"(!({variable} in {old}) || {inner})"
    return f"{current}.all({variable}, {inner})"


# --- walking the object ------------------------------------------------------------------------------------


def _visible_root(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as a root rule sees it: of the metadata, only the name and generateName."""
    metadata = obj.get("metadata") or {}
    visible = {key: metadata[key] for key in ("name", "generateName") if key in metadata}
    return {**obj, "metadata": visible}


def _instances(
    steps: tuple[Step, ...], value: Any, old: Any, transition: bool, path: str = ""
) -> Iterator[tuple[str, Any, Any]]:
    """Every instance of the node under ``value``: its path, value, and the correlated old value (or missing)."""
    if value is None:
        return
    if not steps:
        if transition and (old is None or old is _MISSING):
            return
        yield path, value, old if transition else _MISSING
        return
    (kind, name), rest = steps[0], steps[1:]
    if kind == "field" and isinstance(value, Mapping) and name in value:
        old_child = old.get(name, _MISSING) if isinstance(old, Mapping) else _MISSING
        yield from _instances(rest, value[name], old_child, transition, f"{path}.{name}" if path else name)
    elif kind == "items" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _instances(rest, item, _MISSING, transition, f"{path}[{index}]")
    elif kind == "values" and isinstance(value, Mapping):
        for key, item in value.items():
            old_item = old.get(key, _MISSING) if isinstance(old, Mapping) else _MISSING
            yield from _instances(rest, item, old_item, transition, f"{path}[{key}]")


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
