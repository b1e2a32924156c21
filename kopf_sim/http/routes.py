"""Routes as data: URL path patterns, each with its handlers by HTTP method.

A pattern is a path of segments: a literal (``version``), a variable (``{name}``: any one segment),
a variable with its allowed values (``{subresource:status|finalize}``), or a last variable that takes
the rest of the path (``{tail*}``: zero or more segments). Empty segments do not count (``/api//v1``
is ``/api/v1``), as the apiserver's mux cleans paths. The first route whose pattern matches wins.

A path that no route matches is a 404; a matched route without a handler for the method is a 405.
Adding an endpoint is adding a row; nothing here knows what the handlers do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from kopf_sim.kube import errors

__all__ = ["Pattern", "Route", "Router", "path_segments"]

_H = TypeVar("_H")


def path_segments(path: str) -> list[str]:
    """The segments of a URL path, without empty ones."""
    return [segment for segment in path.split("/") if segment]


@dataclasses.dataclass(frozen=True)
class _Segment:
    literal: str | None = None  # a fixed segment; else a variable:
    variable: str | None = None
    allowed: frozenset[str] | None = None  # the values it may take (None: any)

    def accepts(self, part: str) -> bool:
        if self.literal is not None:
            return part == self.literal
        return self.allowed is None or part in self.allowed


class Pattern:
    """A compiled path pattern: its segments, and a last ``{tail*}`` variable if any."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tail: str | None = None
        self.segments: list[_Segment] = []
        items = path_segments(text)
        for index, item in enumerate(items):
            if not (item.startswith("{") and item.endswith("}")):
                self.segments.append(_Segment(literal=item))
                continue
            name, _, values = item[1:-1].partition(":")
            if name.endswith("*"):
                if index != len(items) - 1 or values:
                    raise ValueError(f"{text!r}: only the last segment may take the rest of the path")
                self.tail = name[:-1]
                continue
            allowed = frozenset(values.split("|")) if values else None
            self.segments.append(_Segment(variable=name, allowed=allowed))

    def match(self, parts: Sequence[str]) -> dict[str, str] | None:
        """The variables' values if the path's segments match the pattern, else None."""
        if len(parts) < len(self.segments) or (self.tail is None and len(parts) != len(self.segments)):
            return None
        pairs = list(zip(self.segments, parts, strict=False))  # the tail's parts are not in it
        if not all(segment.accepts(part) for segment, part in pairs):
            return None
        found = {segment.variable: part for segment, part in pairs if segment.variable is not None}
        if self.tail is not None:
            found[self.tail] = "/".join(parts[len(self.segments) :])
        return found

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"


@dataclasses.dataclass(frozen=True)
class Route(Generic[_H]):
    """A path pattern and its handlers by HTTP method."""

    pattern: Pattern
    methods: Mapping[str, _H]

    def handler(self, method: str) -> _H:
        """The handler of the method here; a 405 if it has none."""
        handler = self.methods.get(method)
        if handler is None:
            raise errors.method_not_allowed()
        return handler


#: How many paths a router remembers the resolution of (then it starts afresh): a run's paths repeat (the same
#: objects and collections, again and again), and resolving one tries every route until one matches.
_REMEMBERED = 4096


class Router(Generic[_H]):
    """An ordered table of routes: a path resolves to the first route that matches it, and its variables."""

    def __init__(self, rows: Iterable[tuple[str, Mapping[str, _H]]]) -> None:
        self.routes = [Route(Pattern(pattern), methods) for pattern, methods in rows]
        self._resolved: dict[tuple[str, ...], tuple[Route[_H], dict[str, str]] | None] = {}

    def resolve(self, parts: Sequence[str]) -> tuple[Route[_H], dict[str, str]] | None:
        key = tuple(parts)
        try:
            resolved = self._resolved[key]
        except KeyError:
            resolved = self._first_match(key)
            if len(self._resolved) >= _REMEMBERED:
                self._resolved.clear()
            self._resolved[key] = resolved
        if resolved is None:
            return None
        route, found = resolved
        return route, dict(found)  # the caller's own: the remembered one stays as it was

    def _first_match(self, parts: Sequence[str]) -> tuple[Route[_H], dict[str, str]] | None:
        for route in self.routes:
            found = route.pattern.match(parts)
            if found is not None:
                return route, found
        return None
