"""A recorder of committed changes as JSON Lines: one watch event per line, in commit order."""
from __future__ import annotations

import json
from typing import IO

from .watching import Change


class ChangeRecorder:
    """Writes ``{"type": …, "object": …}`` lines, as a watch of every resource would have seen them."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __call__(self, change: Change) -> None:
        line = json.dumps({"type": change.type, "object": change.obj}, separators=(",", ":"), sort_keys=True)
        self.stream.write(line + "\n")
        self.stream.flush()
