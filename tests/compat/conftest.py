"""
The compatibility checks against the published Kopf (installed once per machine into a venv of its own).

The differential scenarios (marked ``compat``) take minutes of real time: they run only when asked for
(``pytest -m compat tests/compat``, as CI does in a step of its own); the API check always runs.

What it fakes: nothing; both frameworks run as processes against a cluster served by ``kopf-sim serve``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat import peer
from tests.compat.harness import Difference

#: What the differential scenarios have found in this session (for the summary at the end).
FINDINGS: dict[str, list[Difference]] = {}
RERUNS: list[str] = []


@pytest.fixture(scope="session")
def peer_env() -> peer.PeerEnv:
    return peer.ensure_peer()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "compat" in (config.getoption("-m") or ""):
        return
    selected = [item for item in items if item.get_closest_marker("compat") is None]
    deselected = [item for item in items if item.get_closest_marker("compat") is not None]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FINDINGS:
        return
    found = [difference for differences in FINDINGS.values() for difference in differences]
    explained = [difference for difference in found if difference.reason is not None]
    unexplained = [difference for difference in found if difference.reason is None]
    write = terminalreporter.write_line
    terminalreporter.section("compatibility with the published Kopf")
    write(f"scenarios compared: {len(FINDINGS)} ({', '.join(sorted(FINDINGS))})")
    write(
        f"differences found: {len(found)}; intentional (listed in docs/kopf.md): {len(explained)}; "
        f"unexplained: {len(unexplained)}"
    )
    for reason in sorted({difference.reason for difference in explained if difference.reason}):
        count = sum(1 for difference in explained if difference.reason == reason)
        write(f"  intentional x{count}: {reason}")
    for difference in unexplained:
        write(f"  UNEXPLAINED: {difference}")
    if RERUNS:
        write(f"scenarios re-run after a timing-dependent first run: {', '.join(RERUNS)}")
