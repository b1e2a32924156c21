"""The apiserver's validation of a write's options: CreateOptions, UpdateOptions, PatchOptions, DeleteOptions.

The apiserver decodes the query (and a DeleteOptions body) into the options object and validates it
before anything else: a bad value is ``422 Invalid`` of that object, worded as
``CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All"``,
with every problem as a cause. Values are printed as Go prints them (``%#v`` of a ``[]string``, ``%q``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kopf_sim.kube import errors
from kopf_sim.writes.validation import Cause

__all__ = ["FIELD_MANAGER_MAX_LENGTH", "check_delete_options", "check_write_options", "go_quote"]

FIELD_MANAGER_MAX_LENGTH = 128
_FIELD_VALIDATIONS = ("", "Ignore", "Strict", "Warn")
_PROPAGATIONS = ("Foreground", "Background", "Orphan", "nil")
_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """A string as Go's ``%q`` prints it: non-printable characters escaped as ``\\x01``, ``\\u00a0``, ..."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif _printable(char):
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _printable(char: str) -> bool:
    """Go's ``unicode.IsPrint``: graphic characters and the ASCII space (no other spaces)."""
    return char == " " or (char.isprintable() and not char.isspace())


def _not_supported(field: str, rendered: str, supported: Sequence[str]) -> Cause:
    listed = ", ".join(json.dumps(value) for value in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {rendered}: supported values: {listed}",
        "field": field,
    }


def _dry_run_causes(dry_run: Sequence[Any]) -> Iterator[Cause]:
    if any(value != "All" for value in dry_run):
        rendered = "[]string{" + ", ".join(go_quote(str(value)) for value in dry_run) + "}"
        yield _not_supported("dryRun", rendered, ("All",))


def _manager_causes(manager: str) -> Iterator[Cause]:
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        yield {
            "reason": "FieldValueTooLong",
            "message": f"Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes",
            "field": "fieldManager",
        }
    position = 0
    for char in manager:
        if not _printable(char):
            yield {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {go_quote(manager)}: "
                f"invalid character U+{ord(char):04X} (at position {position})",
                "field": "fieldManager",
            }
        position += len(char.encode())


def _raise(kind: str, causes: list[Cause]) -> None:
    if causes:
        raise errors.invalid(kind, "meta.k8s.io", "", causes)


def check_write_options(
    kind: str,
    *,
    dry_run: Sequence[Any],
    manager: str | None,
    field_validation: str,
    force: str | None = None,
    apply: bool = False,
) -> None:
    """Refuse bad options of a create, update or patch (``kind``: CreateOptions, UpdateOptions, PatchOptions)."""
    causes: list[Cause] = []
    if kind == "PatchOptions":
        if not apply and force is not None:
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: may not be specified for non-apply patch",
                    "field": "force",
                }
            )
        if apply and not manager:
            causes.append(
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch",
                    "field": "fieldManager",
                }
            )
    causes.extend(_manager_causes(manager or ""))
    causes.extend(_dry_run_causes(dry_run))
    if field_validation not in _FIELD_VALIDATIONS:
        causes.append(_not_supported("fieldValidation", go_quote(field_validation), _FIELD_VALIDATIONS))
    _raise(kind, causes)


def check_delete_options(options: Mapping[str, Any]) -> None:
    """Refuse bad options of a deletion (the query's and the body's, merged)."""
    causes: list[Cause] = []
    policy = options.get("propagationPolicy")
    if policy is not None and options.get("orphanDependents") is not None:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {go_quote(str(policy))}: orphanDependents and deletionPropagation "
                "cannot be both set",
                "field": "propagationPolicy",
            }
        )
    if policy is not None and policy not in _PROPAGATIONS[:3]:
        causes.append(_not_supported("propagationPolicy", go_quote(str(policy)), _PROPAGATIONS))
    dry_run = options.get("dryRun")
    if dry_run is not None:
        causes.extend(_dry_run_causes(list(dry_run) if isinstance(dry_run, list | tuple) else [dry_run]))
    _raise("DeleteOptions", causes)
