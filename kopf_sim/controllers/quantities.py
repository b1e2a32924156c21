"""Resource quantities (``1Gi``, ``500M``, ``1.5e3``) as numbers, to compare storage sizes."""

from __future__ import annotations

import decimal
import re

__all__ = ["parse_quantity"]

_SUFFIXES: dict[str, int | decimal.Decimal] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": decimal.Decimal("1e-9"),
    "u": decimal.Decimal("1e-6"),
    "m": decimal.Decimal("1e-3"),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")


def parse_quantity(value: object) -> decimal.Decimal | None:
    """The quantity's value (bytes for storage), or None if it is not a valid quantity."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return decimal.Decimal(repr(value))
    match = _QUANTITY.match(str(value or "").strip())  # anything else: its text form
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    result = decimal.Decimal(number)
    if exponent:
        return result * decimal.Decimal(10) ** int(exponent[1:])
    return result * decimal.Decimal(_SUFFIXES[suffix or ""])
