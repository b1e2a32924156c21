"""One CEL expression with the Kubernetes libraries, compiled once and evaluated with named values.

For the expressions of admission policies (``object``, ``oldObject``, ``request``, ``params``...); the CRD rules
have an evaluation of their own (:mod:`kopf_sim.cel.rules`), tuned for many rules per write.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from kopf_sim.cel.authorizer import AUTHORIZER_FUNCTIONS
from kopf_sim.cel.library import FUNCTIONS
from kopf_sim.cel.programs import CompileError, compile_expression, evaluation_error, for_evaluation, load_bindings

__all__ = ["CompileError", "EvaluationError", "Expression", "expression"]


class EvaluationError(Exception):
    """An expression that failed at evaluation; the text is the CEL error's, as the apiserver words it."""


class Expression:
    """A compiled expression; :class:`CompileError` at construction if the apiserver would not compile it."""

    def __init__(self, source: str, variables: frozenset[str]) -> None:
        compile_expression(source, variables)
        self.source = source
        self._program = load_bindings().compile(for_evaluation(source))
        self._functions = {**FUNCTIONS, **AUTHORIZER_FUNCTIONS} if "authorizer" in variables else FUNCTIONS

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        context = load_bindings().Context(variables=dict(values), functions=self._functions)
        try:
            return self._program.execute(context)
        except Exception as exc:  # the bindings raise assorted built-in errors
            raise EvaluationError(evaluation_error(exc)) from None


@functools.lru_cache(maxsize=1024)
def expression(source: str, variables: frozenset[str]) -> Expression:
    """The compiled expression, compiled once per source (policies are evaluated on every matching write)."""
    return Expression(source, variables)
