"""Compiling one CEL expression as the apiserver does: parse errors and undeclared references in cel-go's words.

The bindings parse and plan an expression, but they do not type-check it: an unknown name fails only when it is
evaluated. The apiserver rejects such a rule when the CRD (or policy) is created, so the names an expression
references are checked here against the variables of its environment and the functions the libraries declare.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from kopf_sim.cel.library import BUILTINS, FUNCTIONS

__all__ = ["CompileError", "compile_expression", "evaluation_error", "load_bindings"]

# Names that are types or namespaces in CEL, usable as values (``type(x) == int``, ``optional.none()``).
_TYPE_NAMES = frozenset({"int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type"})
_NAMESPACES = frozenset({"optional"})
_COMPREHENSION = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
_BINDINGS_PREFIX = re.compile(r"^Failed to parse expression '.*?': ", re.DOTALL)


class CompileError(Exception):
    """An expression that the apiserver would not compile; the text is cel-go's (``ERROR: <input>:1:9: …``)."""


def load_bindings() -> Any:
    """The CEL bindings' module, or a clear error when the optional dependency is not installed."""
    try:
        import cel
    except ImportError:
        raise CompileError(
            "CEL expressions need the 'common-expression-language' package: pip install 'kopf[cel]'"
        ) from None
    return cel


def compile_expression(source: str, variables: Collection[str]) -> Any:
    """A compiled program of the expression, or :class:`CompileError` worded as cel-go's issues."""
    cel = load_bindings()
    try:
        program = cel.compile(source)
    except (ValueError, RuntimeError) as exc:
        raise CompileError(_go_issue_text(str(exc))) from None
    bound = set(_COMPREHENSION.findall(source))
    for name in program.variables():
        if name not in variables and name not in bound and name not in _TYPE_NAMES | _NAMESPACES:
            raise CompileError(_undeclared(source, name))
    for name in program.functions():
        if name[:1].isalpha() and name not in FUNCTIONS and name not in BUILTINS:
            raise CompileError(_undeclared(source, name))
    return program


def _go_issue_text(text: str) -> str:
    """The bindings' parse error as cel-go prints its issues (the same text, cel-go's gutter)."""
    text = _BINDINGS_PREFIX.sub("", text).rstrip("\n")
    return "\n".join(" " + line if line.startswith("|") else line for line in text.split("\n"))


def _undeclared(source: str, name: str) -> str:
    match = re.search(rf"\b{re.escape(name)}\b", source)
    offset = match.start() if match else 0
    line_start = source.rfind("\n", 0, offset) + 1
    line_no = source.count("\n", 0, offset) + 1
    line = source[line_start:].split("\n", 1)[0]
    column = offset - line_start
    caret = "." * column + "^"
    return (
        f"ERROR: <input>:{line_no}:{column + 1}: undeclared reference to '{name}' (in container '')\n"
        f" | {line}\n | {caret}"
    )


_PYTHON_FAILURE = re.compile(r"Python function call failed: \w+: (.*?)\. Check function arguments", re.DOTALL)


def evaluation_error(exc: BaseException) -> str:
    """A failed evaluation in cel-go's words (``no such key: x``), from the bindings' exception."""
    text = str(exc)
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else text}"
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, IndexError):
        return "index out of range"
    if isinstance(exc, TypeError) and text.startswith("No such overload"):
        return "no such overload"
    found = _PYTHON_FAILURE.search(text)
    if found:
        return found.group(1)
    return text.split(". Check ")[0]
