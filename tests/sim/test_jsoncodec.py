"""The store's compact JSON: orjson's bytes where it is installed, the standard library's otherwise, the same."""

from __future__ import annotations

import datetime
import json
import tracemalloc
from typing import Any

import pytest

from kopf_sim.kube import jsoncodec

SAMPLES: list[Any] = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}},
    {"spec": {"replicas": 3, "paused": False, "ratio": 0.25, "big": 1e300, "neg": -17, "list": [1, [2, {}], []]}},
    {"text": 'quotes " and \\ backslashes, \n newlines, \t tabs, \x01 controls, é, 日本, \u2028, emoji 🙂'},
    {"huge": 2**70, "negative": -(2**64)},  # beyond orjson's 64 bits: the standard library's way
    {"nulls": None, "in": [None]},
    {"nan": float("nan"), "inf": [float("inf"), float("-inf")]},  # (Python's NaN, Infinity: not orjson's null)
    {1: "an int key", 2.5: "a float key"},  # (keys made strings, as json.dumps makes them)
    ["a", "list", 1],
    "a string",
]


@pytest.fixture(params=["orjson", "standard"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "orjson":
        pytest.importorskip("orjson")
    else:
        monkeypatch.setattr(jsoncodec, "orjson", None)
    return str(request.param)


@pytest.mark.parametrize("data", SAMPLES)
def test_the_bytes_are_the_standard_librarys(codec: str, data: Any) -> None:
    expected = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    assert jsoncodec.compact_bytes(data) == expected
    assert jsoncodec.compact_text(data) == expected.decode()


def test_small_floats_are_written_as_go_writes_them_with_orjson() -> None:
    pytest.importorskip("orjson")
    assert jsoncodec.compact_bytes({"a": 1e-7, "b": 1e-5, "c": 1.5}) == b'{"a":1e-7,"b":0.00001,"c":1.5}'


def test_small_floats_are_written_as_python_writes_them_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsoncodec, "orjson", None)
    assert jsoncodec.compact_bytes({"a": 1e-7, "b": 1e-5, "c": 1.5}) == b'{"a":1e-07,"b":1e-05,"c":1.5}'


@pytest.mark.parametrize("value", [datetime.datetime(2026, 1, 1), {1, 2}, object()])
def test_what_is_not_json_is_refused(codec: str, value: Any) -> None:
    with pytest.raises(TypeError):
        jsoncodec.compact_bytes({"value": value})


def test_the_bytes_hold_no_more_memory_than_their_size(codec: str) -> None:
    """orjson's own bytes keep its buffer's room (4 KiB): a store of a million objects would hold gigabytes."""
    data = SAMPLES[0]
    tracemalloc.start()
    try:
        kept = [jsoncodec.compact_bytes(data) for _ in range(100)]
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 100 * (len(kept[0]) + 200)


TEXTS = [
    '{"kind": "ConfigMap", "data": {"a": "1"}, "n": [1, -2, 3.5, 1e-7, 1E5, -0.0, true, null]}',
    '\n  {"a": {"b": [{}]}}  \n',
    '{"big": 12345678901234567890123, "negative": -9223372036854775809, "u64": 18446744073709551615}',
    '{"nan": NaN, "inf": [Infinity, -Infinity]}',  # (not JSON, but Python's json reads them)
    '{"lone": "\\ud800", "pair": "\\ud83d\\ude42", "escapes": "\\n\\t\\u0000\\"\\\\"}',
    '{"same": 1, "same": 2}',
    "\x0c{}\x0b",  # (whitespace to Python's strip, not to JSON)
    '["a list"]',
    '"a string"',
    "{} trailing",
    "{broken",
    "",
    "   \n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_objects_parse_as_the_standard_library_parses_them(codec: str, text: str) -> None:
    try:
        expected = json.loads(text.strip())
    except ValueError:
        expected = None
    parsed = jsoncodec.parse_object(text, exactly=jsoncodec.reads_exactly(text))
    assert repr(parsed) == repr(expected if isinstance(expected, dict) else None)  # (repr: NaN, -0.0, int or float)


def test_numbers_of_19_digits_or_more_are_not_left_to_orjson() -> None:
    pytest.importorskip("orjson")
    assert jsoncodec.reads_exactly('{"a": 123456789012345678, "b": "1234567890123456789 as text, too"}') is False
    assert jsoncodec.reads_exactly('{"a": 123456789012345678, "b": "12345 67890"}') is True
