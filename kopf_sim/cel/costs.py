"""The cost limit's spirit: a rule that iterates more than the budget allows is rejected at CRD creation.

The apiserver estimates a rule's worst-case cost from the schema's bounds (``maxItems``, ``maxProperties``):
an unbounded list is as long as a maximal request (3 MiB) of its smallest items could make it, and a
comprehension over it costs that many times its body. A rule over such a list fails the per-rule limit, and
the apiserver asks for ``maxItems`` instead. This estimate follows the comprehensions (``all``, ``exists``,
``exists_one``, ``map``, ``filter``) and their nesting over the schema; what it cannot resolve to a schema
node it counts as one element, so that it never rejects a rule that the apiserver would accept for its
comprehensions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["PER_CALL_LIMIT", "excess_factor"]

PER_CALL_LIMIT = 1_000_000  # the apiserver's per-rule budget
MAX_REQUEST_BYTES = 3 * 1024 * 1024
_MACRO = re.compile(
    r"((?:[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*)\s*\.\s*(all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,"
)
_OPERATIONS = re.compile(r"\.[A-Za-z_]|==|!=|<=|>=|&&|\|\||[<>+\-*/%!]")
_MIN_SIZES = {"string": 2, "integer": 1, "number": 1, "boolean": 4, "object": 2, "array": 2}

Schema = Mapping[str, Any]


def excess_factor(source: str, root: Schema, steps: tuple[tuple[str, str], ...]) -> float | None:
    """How many times the rule's estimated cost exceeds the per-rule budget; None when it is within."""
    node: Schema | None = root
    for kind, name in steps:
        node = _step(node, kind, name)
    cost = _cost(source, {"self": node, "oldSelf": node})
    return cost / PER_CALL_LIMIT if cost > PER_CALL_LIMIT else None


def _step(node: Schema | None, kind: str, name: str) -> Schema | None:
    if node is None:
        return None
    if kind == "field":
        found = (node.get("properties") or {}).get(name)
        return found if isinstance(found, Mapping) else None
    key = "additionalProperties" if kind == "values" else "items"
    found = node.get(key)
    return found if isinstance(found, Mapping) else None


def _cost(text: str, scope: Mapping[str, Schema | None]) -> float:
    """Operations outside comprehensions count one each; a comprehension counts its size times its body."""
    total = 0.0
    position = 0
    flat = ""
    while True:
        match = _MACRO.search(text, position)
        if match is None:
            flat += text[position:]
            break
        flat += text[position : match.start()]
        body_end = _closing_paren(text, match.end())
        receiver = _resolve(match.group(1), scope)
        size, element = _cardinality(receiver)
        body_scope = {**scope, match.group(3): element}
        total += size * (1 + _cost(text[match.end() : body_end], body_scope))
        position = body_end + 1
    return total + len(_OPERATIONS.findall(flat)) + 1


def _closing_paren(text: str, start: int) -> int:
    depth = 1
    quote = ""
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            quote = "" if char == quote and text[index - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
    return len(text)


def _resolve(chain: str, scope: Mapping[str, Schema | None]) -> Schema | None:
    first, *fields = chain.split(".")
    node = scope.get(first)
    for name in fields:
        node = _step(node, "field", name)
    return node


def _cardinality(node: Schema | None) -> tuple[float, Schema | None]:
    """The most elements a list or map of this schema may hold, and the schema of one element."""
    if node is None:
        return 1.0, None
    if node.get("type") == "array":
        items = node.get("items") if isinstance(node.get("items"), Mapping) else None
        bound = node.get("maxItems")
        return float(bound) if isinstance(bound, int) else _unbounded(items, key_bytes=0), items
    additional = node.get("additionalProperties")
    if node.get("type") == "object" and isinstance(additional, Mapping):
        bound = node.get("maxProperties")
        # a map's comprehension variable is its key: a string
        key: Schema = {"type": "string"}
        return float(bound) if isinstance(bound, int) else _unbounded(additional, key_bytes=3), key
    return 1.0, None


def _unbounded(element: Schema | None, *, key_bytes: int) -> float:
    smallest = _MIN_SIZES.get(str((element or {}).get("type")), 1) + key_bytes
    return float((MAX_REQUEST_BYTES - 2) // (smallest + 1))
