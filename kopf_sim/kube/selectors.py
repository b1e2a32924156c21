"""Label and field selectors: parsing the query-string syntax and matching objects.

Both list and watch use them, and so will admission (``objectSelector``/``namespaceSelector``
as structured label selectors), hence the structured constructor :meth:`LabelSelector.from_spec`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from typing import Any

from kopf_sim.kube import errors

_KEY_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_KEY_NAME}$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|>|<|[^\s!=(),<>]+)")


@dataclasses.dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        match self.operator:
            case "exists":
                return present
            case "!":
                return not present
            case "=" | "in":
                return present and value in self.values
            case "!=" | "notin":
                return not present or value not in self.values
            case "gt" | "lt":
                try:
                    number, bound = int(value or ""), int(self.values[0])
                except ValueError:
                    return False
                return number > bound if self.operator == "gt" else number < bound
        return False


@dataclasses.dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(req.matches(labels) for req in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        """Parse ``a=b,c in (d,e),!f`` into requirements; a 400 BadRequest on syntax errors."""
        if not text or not text.strip():
            return cls()
        tokens = _tokenize(text)
        requirements: list[Requirement] = []
        pos = 0
        while pos < len(tokens):
            requirement, pos = _parse_requirement(tokens, pos, text)
            requirements.append(requirement)
            if pos < len(tokens):
                if tokens[pos] != ",":
                    raise errors.bad_request(f"unable to parse requirement: found '{tokens[pos]}', expected: ','")
                pos += 1
                if pos == len(tokens):
                    raise errors.bad_request("unable to parse requirement: found '', expected: identifier")
        return cls(tuple(requirements))

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> LabelSelector:
        """A structured selector (``matchLabels`` + ``matchExpressions``), as in Deployments and webhooks."""
        if not spec:
            return cls()
        reqs = [Requirement(k, "=", (str(v),)) for k, v in sorted((spec.get("matchLabels") or {}).items())]
        for expr in spec.get("matchExpressions") or []:
            op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(expr.get("operator"))
            if op is None:
                raise errors.bad_request(f"{expr.get('operator')!r} is not a valid label selector operator")
            reqs.append(Requirement(expr["key"], op, tuple(expr.get("values") or ())))
        return cls(tuple(reqs))

    def __str__(self) -> str:
        parts = []
        for req in self.requirements:
            match req.operator:
                case "exists":
                    parts.append(req.key)
                case "!":
                    parts.append(f"!{req.key}")
                case "=" | "!=":
                    parts.append(f"{req.key}{req.operator}{req.values[0]}")
                case "in" | "notin":
                    parts.append(f"{req.key} {req.operator} ({','.join(req.values)})")
                case "gt":
                    parts.append(f"{req.key}>{req.values[0]}")
                case "lt":
                    parts.append(f"{req.key}<{req.values[0]}")
        return ",".join(parts)


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if not match:  # pragma: no cover - the pattern accepts every non-blank character
            raise errors.bad_request(f"unable to parse requirement: unexpected text at {pos}")
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def _check_key(key: str) -> None:
    if not _KEY.fullmatch(key) or len(key.split("/")[-1]) > 63:
        raise errors.bad_request(
            f'unable to parse requirement: key: Invalid value: "{key}": '
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.fullmatch(value):
        raise errors.bad_request(
            f'unable to parse requirement: values[0]: Invalid value: "{value}": '
            "a valid label must be an empty string or consist of alphanumeric "
            "characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character"
        )


def _parse_requirement(tokens: list[str], pos: int, text: str) -> tuple[Requirement, int]:
    if tokens[pos] == "!":
        if pos + 1 >= len(tokens):
            raise errors.bad_request("unable to parse requirement: found '', expected: identifier")
        _check_key(tokens[pos + 1])
        return Requirement(tokens[pos + 1], "!"), pos + 2
    key = tokens[pos]
    if key in {",", "(", ")", "=", "==", "!=", "<", ">"}:
        raise errors.bad_request(f"unable to parse requirement: found '{key}', expected: !, identifier")
    _check_key(key)
    pos += 1
    if pos >= len(tokens) or tokens[pos] == ",":
        return Requirement(key, "exists"), pos
    op = tokens[pos]
    if op in {"=", "==", "!="}:
        value = tokens[pos + 1] if pos + 1 < len(tokens) and tokens[pos + 1] not in {",", ")", "("} else ""
        _check_value(value)
        return Requirement(key, "!=" if op == "!=" else "=", (value,)), pos + (2 if value else 1)
    if op in {">", "<"}:
        if pos + 1 >= len(tokens) or not tokens[pos + 1].lstrip("-").isdigit():
            raise errors.bad_request(
                f"unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer in {text!r}"
            )
        return Requirement(key, "gt" if op == ">" else "lt", (tokens[pos + 1],)), pos + 2
    if op in {"in", "notin"}:
        if pos + 1 >= len(tokens) or tokens[pos + 1] != "(":
            raise errors.bad_request("unable to parse requirement: found '', expected: '('")
        pos += 2
        values: list[str] = []
        while pos < len(tokens) and tokens[pos] != ")":
            if tokens[pos] != ",":
                _check_value(tokens[pos])
                values.append(tokens[pos])
            pos += 1
        if pos >= len(tokens):
            raise errors.bad_request("unable to parse requirement: found '', expected: ')'")
        if not values:
            raise errors.bad_request(
                "unable to parse requirement: for 'in', 'notin' operators, values set can't be empty"
            )
        return Requirement(key, op, tuple(values)), pos + 1
    raise errors.bad_request(f"unable to parse requirement: found '{op}', expected: in, notin, =, ==, !=, gt, lt")


@dataclasses.dataclass(frozen=True)
class FieldRequirement:
    field: str
    negated: bool
    value: str


@dataclasses.dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    @classmethod
    def parse(cls, text: str | None, supported: Collection[str]) -> FieldSelector:
        """Parse ``metadata.name=x,status.phase!=Running``; unsupported fields are a 400 as in the apiserver."""
        if not text or not text.strip():
            return cls()
        reqs: list[FieldRequirement] = []
        for part in _split_unescaped(text, ","):
            match = re.match(r"^\s*([^!=\s]+)\s*(!=|==|=)(.*)$", part)
            if not match:
                raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
            field, op, value = match.group(1), match.group(2), _unescape(match.group(3).strip())
            if field not in supported:
                raise errors.bad_request(f"field label not supported: {field}")
            reqs.append(FieldRequirement(field, op == "!=", value))
        return cls(tuple(reqs))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for req in self.requirements:
            actual = field_value(obj, req.field)
            if (actual == req.value) == req.negated:
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact_name(self) -> str | None:
        """The name when the selector pins ``metadata.name=…``: lets lists skip a full scan."""
        for req in self.requirements:
            if req.field == "metadata.name" and not req.negated:
                return req.value
        return None


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a field for field selectors: absent fields are empty strings."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += "\\" + char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == sep:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)
