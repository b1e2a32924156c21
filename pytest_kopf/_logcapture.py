"""The log records of an operator under test (kopf's loggers), kept for the test, its failures and its checks."""

from __future__ import annotations

import logging

__all__ = ["LOG_FORMAT", "LogCapture"]

LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


class LogCapture(logging.Handler):
    """Keeps the records of the ``kopf`` loggers while attached (from a level up, lowering theirs meanwhile)."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.records = records
        self._loggers: list[tuple[logging.Logger, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def attach(self, level: int) -> None:
        logger = logging.getLogger("kopf")
        self.setLevel(level)
        if self not in logger.handlers:
            logger.addHandler(self)
            self._loggers.append((logger, logger.level))
        if logger.getEffectiveLevel() > level:
            logger.setLevel(level)

    def detach(self) -> None:
        for logger, level in self._loggers:
            logger.removeHandler(self)
            logger.setLevel(level)
        self._loggers.clear()

    @property
    def text(self) -> str:
        """The captured lines so far: ``LEVEL logger: message``."""
        formatter = logging.Formatter(LOG_FORMAT)
        return "".join(formatter.format(record) + "\n" for record in self.records)

    def tail(self, lines: int = 30) -> str:
        tail = self.text.splitlines()[-lines:]
        return "The operator's last log lines:\n" + "\n".join(f"  {line}" for line in tail) if tail else ""
