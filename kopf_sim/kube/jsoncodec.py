"""Compact JSON as the store keeps and serves it: fast where orjson is installed.

The simulator encodes every object that it stores (a load of 100,000 objects encodes 100,000). With orjson
(the ``speed`` extra) an object of ~300 bytes takes 1 µs to encode instead of 5 (copied to bytes of its
size: orjson's own bytes keep the room of its buffer, 4 KiB at least, for as long as a store keeps them);
without it, the standard library does it. The bytes are the same either way but for small floats: orjson
writes ``1e-7`` and ``0.00001`` where Python writes ``1e-07`` and ``1e-05`` (Go's apiserver writes them as
orjson does). What orjson would write otherwise goes to the standard library: integers beyond 64 bits, keys
that are not strings, and data with a null (which may be a ``NaN``: orjson writes it as ``null``, Python as
``NaN``).
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Sequence
from typing import Any

try:
    import orjson
except ImportError:  # (the ``speed`` extra is not installed: the standard library does it all)
    orjson = None  # type: ignore[assignment]

#: Compact JSON as the apiserver writes it. JSON data has no cycles to look for: without the check,
#: the encoding of an object takes a half less time (the simulator encodes every object it sends).
_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
#: The C encoder that ``_compact.encode`` makes on each call, made once (a store encodes each object it stores).
_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # (not in every Python: then the usual way)
_compact_chunks: Callable[[Any, int], Sequence[str]] | None = (
    None
    if _make_encoder is None
    else _make_encoder(None, _compact.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
)


def compact_text(data: Any) -> str:
    """``json.dumps(data, separators=(",", ":"), ensure_ascii=False)``, for JSON data (acyclic)."""
    if _compact_chunks is None:
        return _compact.encode(data)
    return "".join(_compact_chunks(data, 0))


def compact_bytes(data: Any) -> bytes:
    """:func:`compact_text` as UTF-8 bytes (what the store keeps and sends)."""
    if orjson is not None:
        try:
            raw = orjson.dumps(data, option=_ORJSON_OPTIONS, default=_not_json)
        except TypeError:  # a big integer, a key that is not a string: the standard library's way
            pass
        else:
            if b"null" not in raw:  # (a null may be a NaN, which orjson writes as null: encoded as below)
                return bytes(memoryview(raw))  # (a copy of its size: orjson's own holds 4 KiB or more for any)
    return compact_text(data).encode()


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: orjson's encoding of datetimes, dataclasses and subclasses of str, int, dict, list is its own: those go
#: through ``default`` (which refuses them) or are encoded as their base types are, as by the standard library.
_ORJSON_OPTIONS = 0 if orjson is None else orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
