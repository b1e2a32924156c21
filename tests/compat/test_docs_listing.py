"""Every intentional difference that the harness accepts is listed in the docs, with the same reason."""

from __future__ import annotations

import pathlib

from tests.compat import apicompat, harness

DOCS = pathlib.Path(__file__).parent.parent.parent / "docs" / "kopf.md"


def test_every_intentional_difference_is_documented() -> None:
    text = DOCS.read_text()
    listed = text.split("## Intentional differences", 1)[1]
    for known in harness.INTENTIONAL:
        assert known.reason in listed, f"docs/kopf.md does not list: {known.reason}"
    for reason in apicompat.INTENTIONAL.values():
        assert reason in listed, f"docs/kopf.md does not list: {reason}"
