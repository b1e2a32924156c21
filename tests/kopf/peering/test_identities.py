"""Identities & records: stable, unique, hosts, round trips, keep-alive intervals."""

from __future__ import annotations

import datetime

import pytest

from kopf._core.engines import peering

pytestmark = pytest.mark.looptime


def test_manual_identity_is_stable() -> None:
    assert peering.detect_own_id(manual=True) == peering.detect_own_id(manual=True)
    assert "@" in peering.detect_own_id(manual=True)
    assert "/" not in peering.detect_own_id(manual=True)


def test_operator_identity_is_unique_per_start() -> None:
    one = peering.detect_own_id()
    two = peering.detect_own_id()
    assert one != two
    assert one.startswith(peering.detect_own_id(manual=True) + "/")


def test_pod_name_is_used_as_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "operator-7d9f8-xyz")
    assert peering.detect_own_id(manual=True).endswith("@operator-7d9f8-xyz")


def test_peer_records_round_trip() -> None:
    moment = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
    peer = peering.Peer(identity="x", priority=5, lifetime=60, lastseen=moment, message="hi")
    assert peer.as_dict() == {"priority": 5, "lifetime": 60, "lastseen": moment.isoformat(), "message": "hi"}
    assert peering.Peer.parse("x", peer.as_dict()) == peer
    assert peer.deadline == moment + datetime.timedelta(seconds=60)
    assert not peer.is_dead(moment + datetime.timedelta(seconds=59))
    assert peer.is_dead(moment + datetime.timedelta(seconds=60))


def test_peer_parsing_tolerates_naive_and_zulu_times() -> None:
    naive = peering.Peer.parse("x", {"priority": 1, "lifetime": 10, "lastseen": "2026-01-01T00:00:00"})
    zulu = peering.Peer.parse("x", {"priority": 1, "lifetime": 10, "lastseen": "2026-01-01T00:00:00Z"})
    assert naive is not None and zulu is not None and naive.lastseen == zulu.lastseen
    assert peering.parse_peers({"status": {"a": {"priority": 1}, "b": "junk", "c": {"priority": "x"}}}) == [
        peering.Peer(identity="a", priority=1)
    ]
    assert peering.parse_peers(None) == []


def test_keepalive_interval() -> None:
    assert peering.keepalive_interval(60) == 30
    assert peering.keepalive_interval(1) == 1
