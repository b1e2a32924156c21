"""Every command and option of the published ``kopf`` CLI is accepted by ours (the help texts may differ)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from tests.compat import peer

COMMANDS = ["run", "freeze", "resume"]
_OPTION = re.compile(r"^\s+((?:-\w, )?--[\w-]+(?: / --[\w-]+)?)", re.MULTILINE)


def _options(kopf: pathlib.Path, command: str) -> set[str]:
    result = subprocess.run([str(kopf), command, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(_OPTION.findall(result.stdout))


def _commands(kopf: pathlib.Path) -> set[str]:
    result = subprocess.run([str(kopf), "--help"], capture_output=True, text=True, timeout=60)
    return set(re.findall(r"^  (\w+)\s", result.stdout.split("Commands:", 1)[1], re.MULTILINE))


def test_the_same_commands(peer_env: peer.PeerEnv) -> None:
    ours = pathlib.Path(sys.executable).with_name("kopf")
    assert _commands(peer_env.kopf) <= _commands(ours)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_published_option_is_accepted(peer_env: peer.PeerEnv, command: str) -> None:
    ours = pathlib.Path(sys.executable).with_name("kopf")
    published = _options(peer_env.kopf, command)
    assert "--help" in published and len(published) > 3  # the parsing works
    assert published <= _options(ours, command)
