"""
List the public API of the importable ``kopf`` as JSON: run by both frameworks' interpreters.

A standalone script (no imports from this project): it runs in the published Kopf's venv as well as
in ours, and only introspects (``dir()``, ``inspect.signature()``): no source files are read.
Public names: ``__all__`` plus the non-underscored names that the module defines itself
(not the modules and the standard library's objects it merely imports).
"""

import collections.abc
import enum
import importlib
import inspect
import json
import sys
import typing

MODULES = ("kopf", "kopf.on", "kopf.testing")
_FOREIGN = [typing, collections.abc, __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)]


def _is_foreign(name, obj):
    for source in _FOREIGN:
        other = source.get(name) if isinstance(source, dict) else getattr(source, name, None)
        if other is not None and other is obj:
            return True
    return False


def _default(value):
    if value is inspect.Parameter.empty:
        return None
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    text = repr(value)
    return text if " at 0x" not in text and " object>" not in text else "<object>"


def _signature(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        {
            "name": p.name,
            "kind": p.kind.name,
            "has_default": p.default is not inspect.Parameter.empty,
            "default": _default(p.default),
        }
        for p in sig.parameters.values()
    ]


def _kind(obj):
    if inspect.ismodule(obj):
        return "module"
    if isinstance(obj, type):
        return "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "function"
    if type(obj).__module__ in ("typing", "types", "collections.abc") or hasattr(obj, "__origin__"):
        return "alias"
    return "value"


def _members(cls):
    members = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        try:
            raw = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(raw, property):
            members[name] = {"kind": "property", "signature": None}
        elif isinstance(raw, (staticmethod, classmethod)) or inspect.isfunction(raw):
            members[name] = {"kind": "method", "signature": _signature(getattr(cls, name))}
        else:
            members[name] = {"kind": "attribute", "signature": None}
    return members


def _describe(obj):
    kind = _kind(obj)
    entry = {"kind": kind, "signature": None, "members": None, "repr": None}
    if kind in ("function", "class"):
        entry["signature"] = _signature(obj)
    if kind == "class" and not issubclass(obj, (dict, tuple)) and not typing.is_typeddict(obj):
        entry["members"] = _members(obj)
    if kind == "class" and issubclass(obj, enum.Enum):
        entry["members"] = {m.name: {"kind": "enum", "signature": None} for m in obj}
    if kind == "class" and typing.is_typeddict(obj):
        entry["members"] = {k: {"kind": "key", "signature": None} for k in obj.__annotations__}
    if kind in ("alias", "value"):
        entry["repr"] = repr(obj)
    return entry


def public_names(module):
    names = set(getattr(module, "__all__", ()))
    for name in dir(module):
        if name.startswith("_") or name in names:
            continue
        obj = getattr(module, name)
        if inspect.ismodule(obj) or _is_foreign(name, obj):
            continue
        if name in ("annotations",):  # `from __future__ import annotations`
            continue
        names.add(name)
    return sorted(names)


def main():
    listing = {}
    for modname in MODULES:
        module = importlib.import_module(modname)
        listing[modname] = {name: _describe(getattr(module, name)) for name in public_names(module)}
    json.dump(listing, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
