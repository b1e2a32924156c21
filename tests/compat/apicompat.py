"""
Compare two listings of the public API (from ``introspect.py``): is ours a drop-in for the peer's?

Ours may add names, parameters with defaults, and members; it may not lack a name, a member,
a parameter, a parameter's way of passing (positional/keyword), or change a default value.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

Listing = Mapping[str, Mapping[str, Any]]
Params = Sequence[Mapping[str, Any]]

_POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")

#: Defaults that differ in their text but not in what the callers get: (peer's, ours) per name.
EQUIVALENT_DEFAULTS: dict[str, set[tuple[str, str]]] = {}

#: The differences of the API that we keep on purpose, with the reasons (also in docs/kopf.md).
INTENTIONAL: dict[str, str] = {
    "kopf.WebhookAutoServer.guess_host: our extra parameter 'self' is required": (
        "a method of the server (its cluster detection can be overridden per server), not a static function"
    ),
    "kopf.WebhookAutoTunnel.guess_host: our extra parameter 'self' is required": (
        "a method of the tunnel (its cluster detection can be overridden per tunnel), not a static function"
    ),
}


def _same_number(a: str, b: str) -> bool:
    """``60`` and ``60.0`` are the same default for the callers."""
    try:
        x, y = ast.literal_eval(a), ast.literal_eval(b)
    except (ValueError, SyntaxError):
        return False
    numbers = (int, float)
    return isinstance(x, numbers) and isinstance(y, numbers) and not isinstance(x, bool) and x == y


def _is_positional_only(param: Mapping[str, Any]) -> bool:
    """Positional-only in effect: declared so, or with a mangled name (``_Body__src``) no caller can spell."""
    name: str = param["name"]
    return param["kind"] == "POSITIONAL_ONLY" or (name.startswith("_") and "__" in name[1:])


def compare_signatures(where: str, peer: Params, ours: Params) -> list[str]:
    """The ways in which a call valid for the peer's signature would fail or differ with ours."""
    problems: list[str] = []
    ours_by_name = {p["name"]: p for p in ours}
    ours_positional = [p for p in ours if p["kind"] in _POSITIONAL]
    ours_has_varargs = any(p["kind"] == "VAR_POSITIONAL" for p in ours)
    ours_has_varkw = any(p["kind"] == "VAR_KEYWORD" for p in ours)
    peer_positional = [p for p in peer if p["kind"] in _POSITIONAL]
    for index, param in enumerate(peer_positional):
        if index >= len(ours_positional):
            if not ours_has_varargs:
                problems.append(f"{where}: the positional parameter #{index} {param['name']!r} is missing")
            continue
        other = ours_positional[index]
        if not _is_positional_only(param) and other["name"] != param["name"]:
            problems.append(f"{where}: the positional parameter #{index} is {other['name']!r}, not {param['name']!r}")
        if not _is_positional_only(param) and _is_positional_only(other):
            problems.append(f"{where}: {param['name']!r} cannot be passed by keyword")
    for param in peer:
        name, kind = param["name"], param["kind"]
        if kind == "VAR_POSITIONAL" and not ours_has_varargs:
            problems.append(f"{where}: *{name} is missing")
        elif kind == "VAR_KEYWORD" and not ours_has_varkw:
            problems.append(f"{where}: **{name} is missing")
        elif kind in ("KEYWORD_ONLY", "POSITIONAL_OR_KEYWORD") and not _is_positional_only(param):
            other = ours_by_name.get(name)
            if other is None or _is_positional_only(other) or other["kind"] in ("VAR_POSITIONAL", "VAR_KEYWORD"):
                if not ours_has_varkw:
                    problems.append(f"{where}: the parameter {name!r} is missing")
                continue
            problems.extend(_compare_defaults(f"{where}({name})", param, other))
        elif _is_positional_only(param):
            position = peer_positional.index(param) if param in peer_positional else -1
            if 0 <= position < len(ours_positional):
                problems.extend(_compare_defaults(f"{where}(#{position})", param, ours_positional[position]))
    peer_names = {p["name"] for p in peer}
    peer_has_varargs = any(p["kind"] == "VAR_POSITIONAL" for p in peer)
    for other in ours:
        if other["name"] in peer_names or other["kind"] in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            continue
        if peer_has_varargs and other["kind"] in _POSITIONAL:
            continue  # the peer takes any positional arguments there: ours names them (e.g. `level, msg`)
        if _is_positional_only(other) and ours_positional.index(other) < len(peer_positional):
            continue  # the same positional slot, named differently
        if not other["has_default"]:
            problems.append(f"{where}: our extra parameter {other['name']!r} is required")
    return problems


def _compare_defaults(where: str, peer: Mapping[str, Any], ours: Mapping[str, Any]) -> list[str]:
    if not peer["has_default"]:
        return []  # ours may be more lenient
    if not ours["has_default"]:
        return [f"{where}: has no default (the peer's: {peer['default']})"]
    if peer["default"] == ours["default"] or "<object>" in (peer["default"], ours["default"]):
        return []
    if (peer["default"], ours["default"]) in EQUIVALENT_DEFAULTS.get(peer["name"], set()):
        return []
    if _same_number(peer["default"], ours["default"]):
        return []
    return [f"{where}: the default is {ours['default']}, the peer's is {peer['default']}"]


def compare_listings(peer: Mapping[str, Listing], ours: Mapping[str, Listing]) -> list[str]:
    """Every public name, member and signature of the peer that ours lacks or changes."""
    problems: list[str] = []
    for modname, names in peer.items():
        our_names = ours.get(modname, {})
        for name, entry in names.items():
            where = f"{modname}.{name}"
            other = our_names.get(name)
            if other is None:
                problems.append(f"{where}: missing")
                continue
            if entry["kind"] != other["kind"] and "alias" not in (entry["kind"], other["kind"]):
                problems.append(f"{where}: is a {other['kind']}, the peer's is a {entry['kind']}")
                continue
            if entry["signature"] is not None:
                if other["signature"] is None:
                    problems.append(f"{where}: has no signature")
                else:
                    problems.extend(compare_signatures(where, entry["signature"], other["signature"]))
            for member, details in (entry["members"] or {}).items():
                our_member = (other["members"] or {}).get(member)
                if our_member is None:
                    problems.append(f"{where}.{member}: missing")
                elif details["signature"] is not None and our_member["signature"] is not None:
                    problems.extend(
                        compare_signatures(f"{where}.{member}", details["signature"], our_member["signature"])
                    )
    return problems
