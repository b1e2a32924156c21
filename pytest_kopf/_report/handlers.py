"""The handlers' calls and outcomes, as kopf logs them (``Handler 'create_fn' succeeded.``).

kopf logs each call of a handler (``… is invoked.``, at DEBUG) and its outcome (``succeeded``, ``failed
temporarily``, ``failed permanently``, ``failed with an exception``; ``has unfinished sub-handlers``), naming it
as ``Handler``, ``Timer``, ``Daemon``, ``Activity`` or ``Indexer`` with its id. The reports read these lines.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["HandlerLine", "handler_line"]

_LINE = re.compile(
    r"^(?P<title>Handler|Timer|Daemon|Activity|Indexer) '(?P<id>[^']*)' "
    r"(?P<outcome>is invoked|succeeded|failed temporarily|failed permanently|failed with an exception"
    r"|has unfinished sub-handlers)"
)
#: The outcomes that are a handler's failure (the others: its call, its success, its sub-handlers pending).
FAILED = frozenset({"failed temporarily", "failed permanently", "failed with an exception"})


@dataclasses.dataclass(frozen=True)
class HandlerLine:
    """A log line about a handler: which (``Timer 'refresh'``), and what happened (``succeeded``)."""

    title: str
    id: str
    outcome: str

    @property
    def name(self) -> str:
        return f"{self.title} {self.id!r}"

    @property
    def failed(self) -> bool:
        return self.outcome in FAILED

    @property
    def invoked(self) -> bool:
        return self.outcome == "is invoked"


def handler_line(message: str) -> HandlerLine | None:
    """What a log message says of a handler, if it is one of kopf's lines about a handler's call or outcome."""
    match = _LINE.match(message)
    if match is None:
        return None
    return HandlerLine(match["title"], match["id"], match["outcome"])
