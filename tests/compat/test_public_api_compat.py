"""
Every public name of the published Kopf (``kopf``, ``kopf.on``, ``kopf.testing``) exists in ours, compatibly.

The names, their kinds, their signatures and their classes' members are listed from the installed peer
by introspection in a subprocess (never by reading its files), and the same way from ours.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat import apicompat, peer


@pytest.fixture(scope="module")
def listings(peer_env: peer.PeerEnv) -> tuple[dict[str, Any], dict[str, Any]]:
    return peer.introspect(peer_env.python), peer.introspect_ours()


def test_the_listing_is_meaningful(listings: tuple[dict[str, Any], dict[str, Any]]) -> None:
    published, _ = listings
    assert set(published) == {"kopf", "kopf.on", "kopf.testing"}
    assert len(published["kopf"]) > 100  # e.g. 110 names in 1.45.2
    assert {"Logger", "on", "OperatorSettings", "login_via_client"} <= set(published["kopf"])
    assert {"create", "daemon", "timer", "validate", "ActivityDecorator"} <= set(published["kopf.on"])
    assert set(published["kopf.testing"]) == {"KopfRunner"}


def test_every_published_name_exists_in_ours_with_a_compatible_signature(
    listings: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    published, ours = listings
    problems = apicompat.compare_listings(published, ours)
    unexplained = [problem for problem in problems if problem not in apicompat.INTENTIONAL]
    assert not unexplained, "\n".join(unexplained)


def test_the_intentional_differences_are_still_there(listings: tuple[dict[str, Any], dict[str, Any]]) -> None:
    published, ours = listings
    problems = set(apicompat.compare_listings(published, ours))
    assert set(apicompat.INTENTIONAL) <= problems  # a stale excuse must be removed from the list (and the docs)


def test_the_comparison_detects_the_incompatibilities() -> None:
    def param(name: str, kind: str = "KEYWORD_ONLY", default: str | None = None) -> dict[str, Any]:
        return {"name": name, "kind": kind, "has_default": default is not None, "default": default}

    def listing(**names: Any) -> dict[str, Any]:
        return {
            "kopf": {
                name: {"kind": "function", "signature": sig, "members": None, "repr": None}
                for name, sig in names.items()
            }
        }

    peer_side = listing(fn=[param("a", "POSITIONAL_OR_KEYWORD"), param("b", default="1")], gone=[])
    assert (
        apicompat.compare_listings(
            peer_side,
            listing(
                fn=[param("a", "POSITIONAL_OR_KEYWORD"), param("b", default="1.0"), param("extra", default="None")],
                gone=[],
            ),
        )
        == []
    )
    problems = apicompat.compare_listings(
        peer_side, listing(fn=[param("a", "POSITIONAL_ONLY"), param("b", default="2"), param("required")])
    )
    assert "kopf.gone: missing" in problems
    assert "kopf.fn: 'a' cannot be passed by keyword" in problems
    assert "kopf.fn(b): the default is 2, the peer's is 1" in problems
    assert "kopf.fn: our extra parameter 'required' is required" in problems
