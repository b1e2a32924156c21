"""
The differential harness in CI: every scenario under both frameworks, 0 unexplained differences.

Real processes and real time: a first run with differences is repeated once (the frameworks' timing under
a loaded machine may merge or split the events differently); the differences must show again to count.
"""

from __future__ import annotations

import pathlib

import pytest

from tests.compat import conftest, harness, peer
from tests.compat.scenarios import SCENARIOS

pytestmark = [pytest.mark.compat, pytest.mark.timeout(600)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
def test_no_unexplained_differences(scenario: harness.Scenario, peer_env: peer.PeerEnv, tmp_path: pathlib.Path) -> None:
    framework = harness.Framework("peer", peer_env.kopf)
    _, _, differences = harness.run_side_by_side(scenario, workdir=tmp_path / "first", peer=framework)
    if any(difference.reason is None for difference in differences):
        conftest.RERUNS.append(scenario.name)
        _, _, differences = harness.run_side_by_side(scenario, workdir=tmp_path / "second", peer=framework)
    conftest.FINDINGS[scenario.name] = differences
    unexplained = [str(difference) for difference in differences if difference.reason is None]
    assert not unexplained, "\n".join(unexplained)
