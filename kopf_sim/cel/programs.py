"""Compiling one CEL expression as the apiserver does: parse errors and undeclared references in cel-go's words.

The bindings parse and plan an expression, but they do not type-check it: an unknown name fails only when it is
evaluated. The apiserver rejects such a rule when the CRD (or policy) is created, so the names an expression
references are checked here against the variables of its environment and the functions the libraries declare.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from typing import Any

from kopf_sim.cel.authorizer import AUTHORIZER_FUNCTIONS
from kopf_sim.cel.library import BUILTINS, FUNCTIONS

__all__ = ["CompileError", "compile_expression", "evaluation_error", "fields_read", "for_evaluation", "load_bindings"]

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

        # The bindings log every failing library function; the failures reach the client as causes instead.
        logging.getLogger("cel").setLevel(logging.ERROR)
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
    extra = AUTHORIZER_FUNCTIONS if "authorizer" in variables else {}  # admission expressions only
    for name in program.functions():
        if name[:1].isalpha() and name not in FUNCTIONS and name not in BUILTINS and name not in extra:
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


_STRING_LITERAL = re.compile(
    r"""[rRbB]*(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")"""
)
_MATCHES_CALL = re.compile(r"\bmatches(\s*\()")


def _outside_strings(source: str, rewrite: Any) -> str:
    """The source with ``rewrite`` applied to its code, not to its string literals."""
    parts: list[str] = []
    position = 0
    for literal in _STRING_LITERAL.finditer(source):
        parts += [rewrite(source[position : literal.start()]), literal.group(0)]
        position = literal.end()
    return "".join([*parts, rewrite(source[position:])])


def for_evaluation(source: str) -> str:
    """The source as it is evaluated: ``matches`` calls go to the library's cached regular expressions.

    The bindings compile a pattern on every call, which costs more than the rest of most rules; the library's
    ``kopfMatches`` checks each pattern once with the bindings (so that what they reject still fails) and
    keeps it compiled.
    """
    return _outside_strings(source, lambda code: _MATCHES_CALL.sub(r"kopfMatches\1", code))


_SELF_USE = re.compile(r"\b(self|oldSelf)\b(?:\s*\.\s*([A-Za-z_]\w*)(?!\w|\s*\())?")


def fields_read(source: str) -> frozenset[str] | None:
    """The fields of ``self``/``oldSelf`` that the expression reads, if it reads them only as ``self.field``.

    None when it uses them in any other way (``self == oldSelf``, ``size(self)``, ``self.all(…)``).
    """
    fields: set[str] = set()
    unknown = False

    def scan(code: str) -> str:
        nonlocal unknown
        for match in _SELF_USE.finditer(code):
            if match.group(2) is None:
                unknown = True
            else:
                fields.add(match.group(2))
        return code

    _outside_strings(source, scan)
    return None if unknown else frozenset(fields)
