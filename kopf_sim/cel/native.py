"""A pass-confirming evaluator of common CEL rules in Python, on the JSON values as they are.

Handing a value to the bindings costs more than most rules: every field is converted into a CEL value, and
every call of a library function (quantities, URLs, ``lowerAscii``) crosses back into Python. Most writes are
valid, and most rules are simple (comparisons, ``has()``, sizes, string tests, the list macros): this module
compiles such a rule once into Python closures that evaluate it on the object's own values.

It only ever *confirms* that a rule passes: a result other than ``true``, anything it does not know (a
construct or function it does not implement), and anything that CEL would treat differently or as an error
(mixed numeric types, a missing field, an overflow) is :class:`Undecided`, and the rule goes to the bindings,
which decide and word the failure as the apiserver does. So it can make a write faster, never change its
outcome: its only possible mistake would be to call true what CEL calls false, and its operations are kept
to those whose CEL semantics are plain (strict types, no implicit conversions).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from kopf_sim.cel.library import FUNCTIONS, LibraryError

__all__ = ["NativeRule", "Undecided", "compile_native"]

Env = Mapping[str, Any]
Node = Callable[[Env], Any]
NativeRule = Callable[[Env], bool]

_INT64 = (-(2**63), 2**63 - 1)
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


class Undecided(Exception):
    """The native evaluation cannot tell what CEL would answer: the bindings decide."""


class _Unsupported(Exception):
    """A construct that this module does not compile (the rule then always goes to the bindings)."""


@functools.lru_cache(maxsize=4096)
def compile_native(source: str) -> NativeRule | None:
    """A function telling whether the rule passes with these variables (Undecided if it cannot tell), or None."""
    try:
        parser = _Parser(_tokens(source))
        node = parser.expression()
        parser.expect("end")
    except _Unsupported:
        return None

    def passes(env: Env) -> bool:
        try:
            return node(env) is True
        except Undecided:
            raise
        except (LibraryError, TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError):
            raise Undecided from None

    return passes


# --- tokens -------------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
    |(?P<float>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
    |(?P<int>0[xX][0-9a-fA-F]+|\d+)(?P<unsigned>[uU])?
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:.,()\[\]{}])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?"}


def _tokens(source: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    position = 0
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None:
            raise _Unsupported(source[position:])
        position = match.end()
        kind = match.lastgroup
        if kind == "space":
            continue
        if match.group("unsigned"):
            raise _Unsupported("unsigned integers")
        text = match.group(kind or "")
        if kind == "int":
            found.append(("value", int(text, 16) if text[:2] in ("0x", "0X") else int(text)))
        elif kind == "float":
            found.append(("value", float(text)))
        elif kind == "string":  # a prefix (raw, bytes) or triple quotes do not parse: unsupported
            found.append(("value", _unescaped(text[1:-1])))
        elif kind == "name" and text in ("true", "false", "null"):
            found.append(("value", {"true": True, "false": False, "null": None}[text]))
        else:
            found.append(("name" if kind == "name" else text, text))
    found.append(("end", None))
    return found


def _unescaped(body: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        code = body[index + 1]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            index += 2
        elif code == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[index + 2 : index + 6]):
            out.append(chr(int(body[index + 2 : index + 6], 16)))
            index += 6
        else:
            raise _Unsupported("escape")
    return "".join(out)


# --- parsing into closures ----------------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[tuple[str, Any]]) -> None:
        self.tokens = tokens
        self.index = 0
        self.depth = 0

    def peek(self) -> str:
        return self.tokens[self.index][0]

    def take(self) -> tuple[str, Any]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expect(self, kind: str) -> Any:
        token_kind, value = self.take()
        if token_kind != kind:
            raise _Unsupported(f"expected {kind}")
        return value

    def expression(self) -> Node:
        self.depth += 1
        if self.depth > 50:
            raise _Unsupported("too deep")
        condition = self.binary(0)
        if self.peek() == "?":
            self.take()
            then = self.expression()
            self.expect(":")
            otherwise = self.expression()
            self.depth -= 1
            return _ternary(condition, then, otherwise)
        self.depth -= 1
        return condition

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",),
        ("&&",),
        ("==", "!=", "<", "<=", ">", ">=", "in"),
        ("+", "-"),
        ("*", "/", "%"),
    )

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            kind, value = self.tokens[self.index]
            operator = value if kind == "name" and value == "in" else kind
            if operator not in self._LEVELS[level]:
                return left
            self.take()
            right = self.binary(level + 1)
            left = _binary(operator, left, right)

    def unary(self) -> Node:
        if self.peek() == "!":
            self.take()
            return _not(self.unary())
        if self.peek() == "-":
            self.take()
            return _negated(self.unary())
        return self.postfix(self.primary())

    def primary(self) -> Node:
        kind, value = self.take()
        if kind == "value":
            return _constant(value)
        if kind == "(":
            inner = self.expression()
            self.expect(")")
            return inner
        if kind == "[":
            items = self.arguments("]")
            return lambda env: [item(env) for item in items]
        if kind == "name":
            if self.peek() == "(":
                self.take()
                if value == "has":
                    return self.has()
                return _call(value, None, self.arguments(")"))
            return _variable(value)
        raise _Unsupported(kind)

    def has(self) -> Node:
        target = self.postfix(self.primary())
        self.expect(")")
        select = getattr(target, "selection", None)
        if select is None:
            raise _Unsupported("has() of something other than a field")
        return _has(*select)

    def postfix(self, node: Node) -> Node:
        while True:
            kind = self.peek()
            if kind == ".":
                self.take()
                name = self.expect("name")
                if self.peek() == "(":
                    self.take()
                    node = self.method(node, name)
                else:
                    node = _field(node, name)
            elif kind == "[":
                self.take()
                key = self.expression()
                self.expect("]")
                node = _index(node, key)
            else:
                return node

    def method(self, target: Node, name: str) -> Node:
        if name in _MACROS:
            variable = self.expect("name")
            self.expect(",")
            body = self.expression()
            if name == "map" and self.peek() == ",":
                raise _Unsupported("map() with a filter")
            self.expect(")")
            return _macro(name, target, variable, body)
        return _call(name, target, self.arguments(")"))

    def arguments(self, closing: str) -> list[Node]:
        items: list[Node] = []
        while self.peek() != closing:
            items.append(self.expression())
            if self.peek() == ",":
                self.take()
            elif self.peek() != closing:
                raise _Unsupported("argument list")
        self.take()
        return items


# --- the operations, with CEL's strictness ------------------------------------------------------------------


def _constant(value: Any) -> Node:
    return lambda env: value


def _kind(value: Any) -> type:
    """The CEL type family of a JSON value (bool apart from int, as CEL has it)."""
    return type(value)


def _integer(value: Any) -> int:
    if type(value) is not int or not _INT64[0] <= value <= _INT64[1]:
        raise Undecided
    return value


def _equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if _kind(a) is not _kind(b):
        raise Undecided  # mixed types: CEL's answer depends on its numeric and heterogeneous equality
    if type(a) is list:
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(_equal(a[key], b[key]) for key in a)
    if type(a) is float and (a != a or b != b):
        return False
    if type(a) is int:
        return _integer(a) == _integer(b)
    return bool(a == b)


def _ordered(operator: str, a: Any, b: Any) -> bool:
    if _kind(a) is not _kind(b) or type(a) not in (int, float, str):
        raise Undecided
    if type(a) is int:
        a, b = _integer(a), _integer(b)  # beyond int64, the bindings convert otherwise
    if operator == "<":
        return bool(a < b)
    if operator == "<=":
        return bool(a <= b)
    if operator == ">":
        return bool(a > b)
    return bool(a >= b)


def _arithmetic(operator: str, a: Any, b: Any) -> Any:
    kind = _kind(a)
    if kind is not _kind(b):
        raise Undecided
    if kind is int:
        a, b = _integer(a), _integer(b)
        if operator in ("/", "%") and (b <= 0 or a < 0):
            raise Undecided  # CEL truncates toward zero; a zero divisor is an error
        result = {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0, "%": a % b if b else 0}[operator]
        return _integer(result)
    if kind is float and operator in ("+", "-", "*"):
        return {"+": a + b, "-": a - b, "*": a * b}[operator]
    if kind in (str, list) and operator == "+":
        return a + b
    raise Undecided


def _binary(operator: str, left: Node, right: Node) -> Node:
    if operator == "&&":
        return _logical(left, right, decisive=False)
    if operator == "||":
        return _logical(left, right, decisive=True)
    if operator == "==":
        return lambda env: _equal(left(env), right(env))
    if operator == "!=":
        return lambda env: not _equal(left(env), right(env))
    if operator in ("<", "<=", ">", ">="):
        return lambda env: _ordered(operator, left(env), right(env))
    if operator == "in":
        return lambda env: _contains(right(env), left(env))
    return lambda env: _arithmetic(operator, left(env), right(env))


def _logical(left: Node, right: Node, *, decisive: bool) -> Node:
    """``&&`` (false decides) and ``||`` (true decides), commutative over errors as CEL's are."""

    def evaluate(env: Env) -> bool:
        try:
            first = _boolean(left(env))
        except Undecided:
            if _boolean(right(env)) is decisive:
                return decisive
            raise
        if first is decisive:
            return decisive
        return _boolean(right(env))

    return evaluate


def _decided(value: Any) -> Any:
    if value is Undecided:
        raise Undecided
    return value


def _boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise Undecided
    return value


def _contains(container: Any, item: Any) -> bool:
    if type(container) is list:
        return any(_equal(item, element) for element in container)
    if type(container) is dict and type(item) is str:
        return item in container
    raise Undecided


def _not(operand: Node) -> Node:
    return lambda env: not _boolean(operand(env))


def _negated(operand: Node) -> Node:
    def evaluate(env: Env) -> Any:
        value = operand(env)
        if type(value) is int:
            return _integer(-value)
        if type(value) is float:
            return -value
        raise Undecided

    return evaluate


def _ternary(condition: Node, then: Node, otherwise: Node) -> Node:
    return lambda env: then(env) if _boolean(condition(env)) else otherwise(env)


def _variable(name: str) -> Node:
    def evaluate(env: Env) -> Any:
        if name not in env:
            raise Undecided
        return env[name]

    evaluate.variable = name  # type: ignore[attr-defined]
    return evaluate


class _Field:
    """``target.name``: a field of an object (missing is CEL's "no such key": Undecided)."""

    def __init__(self, target: Node, name: str) -> None:
        self.selection = (target, name)
        self.target, self.name = target, name
        self.variable: str | None = getattr(target, "variable", None)  # ``self.name``: one lookup less

    def __call__(self, env: Env) -> Any:
        value = env.get(self.variable) if self.variable is not None else self.target(env)
        if type(value) is not dict or self.name not in value:
            raise Undecided
        return value[self.name]


def _field(target: Node, name: str) -> Node:
    return _Field(target, name)


def _has(target: Node, name: str) -> Node:
    def evaluate(env: Env) -> bool:
        value = target(env)
        if type(value) is not dict:
            raise Undecided
        if name in value and value[name] is None:
            raise Undecided  # a null field: as the schema's nullability makes it
        return name in value

    return evaluate


def _index(target: Node, key: Node) -> Node:
    def evaluate(env: Env) -> Any:
        value, index = target(env), key(env)
        if type(value) is list and type(index) is int and 0 <= index < len(value):
            return value[index]
        if type(value) is dict and type(index) is str and index in value:
            return value[index]
        raise Undecided

    return evaluate


def _macro(name: str, target: Node, variable: str, body: Node) -> Node:
    def items(env: Env) -> list[Any]:
        value = target(env)
        if type(value) is list:
            return value
        if type(value) is dict and name not in ("map", "filter"):  # a map's keys come in the bindings' order
            return list(value)
        raise Undecided

    def results(env: Env) -> list[Any]:
        """The body for every item, or Undecided in place of a result that cannot be told."""
        scope = dict(env)  # one scope for all the items: the body is evaluated before the next item is bound
        found: list[Any] = []
        for item in items(env):
            scope[variable] = item
            try:
                found.append(body(scope))
            except Undecided:
                found.append(Undecided)
        return found

    if name == "map":
        return lambda env: [_decided(result) for result in results(env)]
    if name == "filter":
        return lambda env: [item for item, result in zip(items(env), results(env), strict=True) if _boolean(result)]

    def evaluate(env: Env) -> bool:
        verdicts: list[bool | None] = []
        for result in results(env):
            verdicts.append(None if result is Undecided else _boolean(result))
        if name == "all":
            if False in verdicts:
                return False
            if None in verdicts:
                raise Undecided
            return True
        if name == "exists":
            if True in verdicts:
                return True
            if None in verdicts:
                raise Undecided
            return False
        if None in verdicts:
            raise Undecided
        return verdicts.count(True) == 1

    return evaluate


_STRING_TESTS: dict[str, Callable[[str, str], bool]] = {
    "startsWith": str.startswith,
    "endsWith": str.endswith,
    "contains": str.__contains__,
}


def _call(name: str, target: Node | None, arguments: list[Node]) -> Node:
    operands = ([target] if target is not None else []) + arguments
    if name == "size" and len(operands) == 1:
        return lambda env: _size(operands[0](env))
    if name in _STRING_TESTS and len(operands) == 2:
        test = _STRING_TESTS[name]
        return lambda env: test(*_strings(operands[0](env), operands[1](env)))
    library = FUNCTIONS.get("kopfMatches" if name == "matches" else name)
    if library is None:
        raise _Unsupported(f"function {name}")
    if len(operands) == 1:
        only = operands[0]
        return lambda env: _checked_result(library(_argument(only(env))))
    if len(operands) == 2:
        first, second = operands
        return lambda env: _checked_result(library(_argument(first(env)), _argument(second(env))))
    return lambda env: _checked_result(library(*[_argument(operand(env)) for operand in operands]))


def _argument(value: Any) -> Any:
    """A library function's argument as the bindings pass it; not a map (they pass its keys in their order)."""
    if type(value) is dict or (type(value) is list and any(type(item) in (dict, list) for item in value)):
        raise Undecided
    return value


def _size(value: Any) -> int:
    if type(value) is str and not value.isascii():
        raise Undecided  # the bindings count bytes here, cel-go counts code points: the bindings answer as ever
    if type(value) in (str, list, dict):
        return len(value)
    raise Undecided


def _strings(a: Any, b: Any) -> tuple[str, str]:
    if type(a) is not str or type(b) is not str:
        raise Undecided
    return a, b


def _checked_result(value: Any) -> Any:
    """A library function's result as CEL would have it: JSON-like values only (else, let the bindings tell)."""
    if value is None or type(value) in (bool, int, float, str, list, dict):
        return value
    raise Undecided
