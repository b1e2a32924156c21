"""Compact JSON as the store keeps and serves it, and JSON objects parsed: fast where orjson is installed.

The simulator encodes every object that it stores (a load of 100,000 objects encodes 100,000). With orjson
(the ``speed`` extra) an object of ~300 bytes takes 1 µs to encode instead of 5 (copied to bytes of its
size: orjson's own bytes keep the room of its buffer, 4 KiB at least, for as long as a store keeps them);
without it, the standard library does it. The bytes are the same either way but for small floats: orjson
writes ``1e-7`` and ``0.00001`` where Python writes ``1e-07`` and ``1e-05`` (Go's apiserver writes them as
orjson does). What orjson would write otherwise goes to the standard library: integers beyond 64 bits, keys
that are not strings, and data with a null (which may be a ``NaN``: orjson writes it as ``null``, Python as
``NaN``).

Parsing (a load's documents) is alike: orjson's objects are the standard library's, for texts whose numbers
orjson reads as Python does (none of 19 digits or more: orjson reads those beyond 64 bits as floats); what
orjson refuses (``NaN``, lone surrogates, ...) is then parsed by the standard library, which decides.
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
#: The JSON decoder's C scanner, called directly: a value and where it ends (``json.loads`` without its
#: Python wrapper, which costs a third of a small object's parse).
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


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
                # A copy of its size (orjson's own holds 4 KiB or more for any), made by a join of two: the quickest
                # way to copy bytes (a third of ``bytes(memoryview(raw))``'s time; a join of one would not copy).
                return b"".join((raw, b""))
    return compact_text(data).encode()


#: ASCII digits as ``0``, any other byte as a space: a run of 19 zeros is a number that orjson may not read exactly.
_DIGITS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_NUMBER = b"0" * 19


def reads_exactly(text: str) -> bool:
    """Whether orjson would parse the text's numbers as Python does (no run of 19 digits; e.g. a block of many
    documents: one pass in C over its bytes), so that :func:`parse_object` may use it."""
    return orjson is not None and _LONG_NUMBER not in text.encode("utf-8", "surrogatepass").translate(_DIGITS)


def parse_object(text: str, *, exactly: bool = False) -> Any:
    """The JSON object that is all of the text (but whitespace), or None if it is something else or not JSON.

    ``exactly``: :func:`reads_exactly` said so of this text (or of a text that holds it): orjson parses it.
    """
    if exactly:
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # not JSON, or not as orjson reads it (NaN, a lone surrogate): the standard library decides
        else:
            return parsed if type(parsed) is dict else None
    start = len(text) - len(text.lstrip())
    if not text.startswith("{", start):
        return None
    try:
        parsed, end = _scan_json(text, start)
    except (StopIteration, ValueError, RecursionError):
        return None
    return parsed if end == len(text) or text[end:].isspace() else None


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: orjson's encoding of datetimes, dataclasses and subclasses of str, int, dict, list is its own: those go
#: through ``default`` (which refuses them) or are encoded as their base types are, as by the standard library.
_ORJSON_OPTIONS = 0 if orjson is None else orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
