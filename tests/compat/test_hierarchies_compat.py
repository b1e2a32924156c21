"""The hierarchy functions (kopf.adopt & co.) leave the children as the published Kopf does, field by field."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

from tests.compat import peer

PROBE = pathlib.Path(__file__).with_name("hierarchies_probe.py")


def run_probe(python: str | os.PathLike[str]) -> dict[str, Any]:
    result = subprocess.run(
        [os.fspath(python), str(PROBE)], capture_output=True, text=True, timeout=120, cwd=str(PROBE.parent)
    )  # not -I: ours is importable from the repository
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_the_children_are_the_same_as_with_the_published_kopf(peer_env: peer.PeerEnv) -> None:
    published, ours = run_probe(peer_env.python), run_probe(sys.executable)
    assert published["adopt-unlabelled"][0]["metadata"]["labels"] == {}  # the probe is meaningful
    differing = {name: (published[name], ours.get(name)) for name in published if published[name] != ours.get(name)}
    assert not differing
