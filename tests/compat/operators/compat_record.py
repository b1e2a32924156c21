"""
The operators' own record of their handler calls: one JSON line per call into ``$COMPAT_CALLS``.

Imported by the harness's operators under both frameworks (it knows nothing of either).
Only the kwargs that must be the same under both are recorded, made JSON-friendly.
"""

import json
import os
import threading

_lock = threading.Lock()


def _plain(value):
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def record(fn, obj=None, **data):
    line = json.dumps({"fn": fn, "obj": obj, **{k: _plain(v) for k, v in data.items()}}, sort_keys=True)
    with _lock, open(os.environ["COMPAT_CALLS"], "a", encoding="utf-8") as f:
        f.write(line + "\n")
