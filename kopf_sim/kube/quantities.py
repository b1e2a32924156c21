"""Resource quantities (``1Gi``, ``500M``, ``1.5e3``): their values, and the text the apiserver writes back.

The apiserver decodes a quantity into its Go type and writes it back in canonical form, whatever the
client sent: ``0.5`` (a JSON number) is stored as ``"500m"``, ``1.5Gi`` as ``"1536Mi"``, ``2000`` as
``"2k"``, a ``null`` in a map of quantities as ``"0"``. Clients rely on that: the official ``kubernetes``
client's models take quantities as strings only. The rules (apimachinery's ``resource.Quantity``): the
value is rounded up to nanos; binary suffixes stay binary while the value is a whole number of at least
1024 (else it is written as a decimal); the mantissa is a whole number with the largest exponent that is
a multiple of three (a power of 1024 for binary suffixes); a text already in that form is kept as sent.
"""

from __future__ import annotations

import dataclasses
import decimal
import functools
import re

__all__ = ["FORMAT_WRONG", "SUFFIX_WRONG", "QuantityError", "canonical_quantity", "parse_quantity", "quantity_text"]

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_NAMES = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_NAMES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_TEXT = re.compile(r"([+-]?)0*(\d*)(?:\.(\d*))?([eEinumkKMGTP]*(?:[+-]?\d*))")
_EXPONENT = re.compile(r"[eE][+-]?\d+")
_NANO = decimal.Decimal("1e-9")
_MAX_BINARY = decimal.Decimal(2**63 - 1)
_MAX_FAST_DIGITS = 18  # Go keeps quantities of up to 18 digits as int64 (and their text, if canonical)
_CONTEXT = decimal.Context(prec=200, traps=[decimal.InvalidOperation])

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_WRONG = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A text that is not a quantity, with Go's message for it."""


@dataclasses.dataclass(frozen=True)
class _Parsed:
    negative: bool
    numerator: str  # the digits before the point, without leading zeros ("0" if none)
    denominator: str  # the digits after the point
    base: int  # 10 or 2
    exponent: int  # of the base: -3 for "m", 20 for "Mi", 3 for "e3"
    binary: bool
    exponential: bool  # written as "e<n>" (Go's DecimalExponent format)

    @property
    def value(self) -> decimal.Decimal:
        number = decimal.Decimal(f"{self.numerator}.{self.denominator or '0'}", context=_CONTEXT)
        scaled = number.scaleb(self.exponent, context=_CONTEXT) if self.base == 10 else number * 2**self.exponent
        return -scaled if self.negative else scaled


def _parse(text: str) -> _Parsed:
    match = _TEXT.fullmatch(text)
    if match is None or not text:
        raise QuantityError(FORMAT_WRONG)
    sign, numerator, denominator, suffix = match.groups()
    if suffix in _DECIMAL_SUFFIXES:
        base, exponent, binary, exponential = 10, _DECIMAL_SUFFIXES[suffix], False, False
    elif suffix in _BINARY_SUFFIXES:
        base, exponent, binary, exponential = 2, _BINARY_SUFFIXES[suffix], True, False
    elif _EXPONENT.fullmatch(suffix):
        base, exponent, binary, exponential = 10, int(suffix[1:]), False, True
    else:
        raise QuantityError(SUFFIX_WRONG)
    return _Parsed(sign == "-", numerator or "0", denominator or "", base, exponent, binary, exponential)


def _kept_as_sent(parsed: _Parsed) -> bool:
    """Whether Go keeps the text as it was sent: a small number already in canonical form."""
    digits = parsed.numerator + parsed.denominator
    if parsed.binary:
        fast = not parsed.denominator and 15 - len(parsed.numerator) - int(parsed.exponent * 3 / 10) - 1 >= 0
        return fast and int(parsed.numerator) & 0x07 != 0
    scale = parsed.exponent - len(parsed.denominator)
    return (
        len(digits) <= _MAX_FAST_DIGITS
        and scale >= -9
        and scale % 3 == 0
        and not digits.endswith("000")
        and digits[0] != "0"
    )


def parse_quantity(value: object) -> decimal.Decimal | None:
    """The quantity's value (bytes for storage), or None if it is not a valid quantity."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return decimal.Decimal(repr(value))
    try:
        return _parse(str(value or "").strip()).value
    except QuantityError:
        return None


def quantity_text(value: int | float | str) -> str:
    """A quantity's text as Go's decoder sees it (JSON numbers as they would be written)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


@functools.lru_cache(maxsize=4096, typed=True)  # every write decodes its quantities, mostly the same few
def canonical_quantity(value: int | float | str | None) -> str:
    """The quantity as the apiserver writes it back (``"0"`` for a null); :class:`QuantityError` if invalid."""
    if value is None:
        return "0"
    text = quantity_text(value)
    if text == "0":
        return text
    parsed = _parse(text)
    if _kept_as_sent(parsed):
        return text
    amount = abs(parsed.value)
    if amount:
        amount = amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_CONTEXT)
    binary = parsed.binary and amount >= 1
    if binary:
        amount = min(amount, _MAX_BINARY)
    sign = "-" if parsed.negative and amount else ""
    if binary and amount >= 1024 and amount == amount.to_integral_value():
        return sign + _binary_text(int(amount))
    return sign + _decimal_text(amount, exponential=parsed.exponential)


def _binary_text(amount: int) -> str:
    power = 0
    while power < len(_BINARY_NAMES) - 1 and amount % 1024 == 0:
        amount //= 1024
        power += 1
    return f"{amount}{_BINARY_NAMES[power]}"


def _decimal_text(amount: decimal.Decimal, *, exponential: bool) -> str:
    _, digits, exponent = amount.normalize(context=_CONTEXT).as_tuple()
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digits)) or "0")
    if mantissa == 0:
        return "0"
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if exponential:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    suffix = _DECIMAL_NAMES.get(exponent)
    return f"{mantissa}{suffix}" if suffix is not None else f"{mantissa}e{exponent}"
