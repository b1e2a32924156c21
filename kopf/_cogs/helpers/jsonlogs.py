"""
The JSON log format (``--log-format=json``): one JSON object per record, made by python-json-logger.

A module of its own so that the library is imported only when the format is chosen (~5 ms at start-up).
"""

import datetime
import logging
from collections.abc import Mapping
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from kopf._cogs.helpers.loggers import DEFAULT_REFKEY, INTERNAL_ATTRS, STANDARD_ATTRS, prefixed, redact


class ObjectJsonFormatter(JsonFormatter):
    """
    A JSON formatter: one JSON object per record, with the object's reference under the refkey.

    The fields are: ``message``, the user-provided extras, the object reference
    (only for object-related records), ``severity`` (lowercase), ``timestamp``
    (ISO 8601 in UTC), and the exception's or stack's text if present.
    """

    def __init__(self, *, refkey: str | None = None, prefix: bool = False) -> None:
        super().__init__(
            "%(message)s",
            reserved_attrs=tuple(STANDARD_ATTRS | INTERNAL_ATTRS),
        )
        self.refkey = refkey or DEFAULT_REFKEY
        self.log_prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(prefixed(record, self.log_prefix)))

    def add_fields(
        self,
        log_data: dict[str, Any],
        record: logging.LogRecord,
        message_dict: dict[str, Any],
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        for key in INTERNAL_ATTRS:
            log_data.pop(key, None)
        ref = getattr(record, "k8s_ref", None)
        if isinstance(ref, Mapping):
            log_data[self.refkey] = dict(ref)
        log_data["severity"] = record.levelname.lower()
        log_data["timestamp"] = _iso_timestamp(record.created)


def _iso_timestamp(created: float) -> str:
    # The record's own creation time, converted; no clock is read here.
    return datetime.datetime.fromtimestamp(created, datetime.UTC).isoformat()
