"""
Logging formats, levels, and the redaction of secrets in the log output.

The framework logs through the standard :mod:`logging`. Object-related records
(see ``kopf._core.actions.loggers``) carry the object's reference in the
record's ``k8s_ref`` attribute; the formatters here turn it into a textual
``[namespace/name]`` prefix and/or a structured field of JSON records.

Secrets (tokens, passwords, private keys, certificates) never go to the output:
every handler installed by :func:`configure` has a :class:`SecretsFilter`, and
every formatter of ours masks the secrets once more in the final text (e.g. in
tracebacks or in structured extras). The values to mask are registered with
:func:`register_secret` by the code that obtains the credentials; typical
patterns (HTTP authorization headers, PEM blocks, ``password=…``) are masked
without registration.
"""

import base64
import contextlib
import enum
import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "DEFAULT_REFKEY",
    "MASK",
    "LogFormat",
    "ObjectTextFormatter",
    "SecretsFilter",
    "configure",
    "forget_secrets",
    "make_formatter",
    "redact",
    "register_secret",
]

#: What replaces the secrets in the log output.
MASK = "***"

#: The default top-level key of the object reference in JSON records.
DEFAULT_REFKEY = "object"

#: The record attributes that are ours and never go to the output as such.
INTERNAL_ATTRS = frozenset({"k8s_ref", "k8s_skip", "settings"})

#: The standard attributes of the log records (all others are the extras).
STANDARD_ATTRS = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime", "taskName"}
_NOT_EXTRAS = STANDARD_ATTRS | INTERNAL_ATTRS

#: The 3rd-party loggers that are only shown in the debug mode.
LOW_LEVEL_LOGGERS = ("asyncio", "aiohttp", "urllib3", "kubernetes")

#: Registered secrets shorter than this are not masked verbatim: they would mask
#: innocent fragments of the text everywhere (the patterns still catch them in context).
MIN_SECRET_LENGTH = 4

#: How many distinct secrets are remembered (the oldest ones are forgotten first).
MAX_SECRETS = 1000


class LogFormat(enum.Enum):
    """The log formats, as specified on the command line (``--log-format``)."""

    PLAIN = "%(message)s"
    FULL = "[%(asctime)s] %(name)-20.20s [%(levelname)-8.8s] %(message)s"
    JSON = "-json-"


# -------------------------------------------------------------------------------------------------
# Redaction.
# -------------------------------------------------------------------------------------------------

_secrets_lock = threading.Lock()
_secrets: dict[str, None] = {}  # an insertion-ordered set
_secrets_regex: re.Pattern[str] | None = None

# The patterns are applied after the verbatim secrets. Each keeps the group 1 and masks the rest.
_PATTERNS: list[re.Pattern[str]] = [
    # PEM blocks: private keys, certificates, requests; also with the escaped newlines (in reprs & JSON).
    re.compile(r"(-----BEGIN [A-Z0-9 ]+-----).*?-----END [A-Z0-9 ]+-----", re.DOTALL),
    # The authorization headers & schemes: "Authorization: Bearer xyz", "'Authorization': 'Basic xyz'".
    re.compile(r"(?i)(\b(?:bearer|basic|digest|negotiate)\s+)[A-Za-z0-9._~+/=:-]+"),
    re.compile(r"""(?i)(\bauthorization['"]?\s*[:=]\s*+['"]?+)(?!(?:bearer|basic|digest|negotiate)\s)[^'"\s,;}]+"""),
    # Key-value pairs in reprs, JSON, YAML, or URLs: token=xyz, "password": "xyz", client-key-data: xyz.
    re.compile(
        r"""(?i)(\b(?:[a-z]+[_-])?(?:token|password|passwd|secret|api[_-]?key|private[_-]?key(?:[_-]data)?"""
        r"""|client[_-]key(?:[_-]data)?)['"]?\s*[:=]\s*+(?:b?['"])?+)(?!None\b|null\b|\*\*\*)[^'"\s,;}&)]+"""
    ),
    # Credentials in URLs: https://user:password@host/.
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+(?=@)"),
]


def _variants(value: str) -> Iterable[str]:
    """The ways a secret can appear in the text: as is, escaped in reprs or JSON, line by line."""
    yield value
    yield repr(value)[1:-1]
    yield json.dumps(value)[1:-1]
    if "\n" in value:  # multi-line secrets (e.g. PEM) can be logged line by line
        yield from (line.strip() for line in value.splitlines() if len(line.strip()) >= 16)
    with contextlib.suppress(UnicodeError):  # the kubeconfig-style base64 form, as in `client-key-data`
        yield base64.b64encode(value.encode("utf-8")).decode("ascii")


def register_secret(value: str | bytes | None) -> None:
    """
    Remember a secret value, so that it is masked in all the log output from now on.

    Empty or very short values are ignored (see ``MIN_SECRET_LENGTH``). Bytes are
    decoded as UTF-8 (e.g. PEM data); undecodable bytes are registered in their base64 form.
    """
    global _secrets_regex
    if value is None:
        return
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = base64.b64encode(value).decode("ascii")
    else:
        text = value
    if len(text.strip()) < MIN_SECRET_LENGTH:
        return
    variants = list(_variants(text)) + list(_variants(text.strip()))
    with _secrets_lock:
        added = False
        for variant in variants:
            if len(variant) >= MIN_SECRET_LENGTH and variant not in _secrets:
                _secrets[variant] = None
                added = True
        while len(_secrets) > MAX_SECRETS:
            del _secrets[next(iter(_secrets))]
        if added:
            _secrets_regex = None


def forget_secrets() -> None:
    """Forget all the registered secrets (mostly for tests)."""
    global _secrets_regex
    with _secrets_lock:
        _secrets.clear()
        _secrets_regex = None


def _get_secrets_regex() -> re.Pattern[str] | None:
    global _secrets_regex
    regex = _secrets_regex  # compiled already, or nothing to compile: no lock for every line logged
    if regex is not None or not _secrets:
        return regex
    with _secrets_lock:
        if _secrets_regex is None and _secrets:
            # The longest first, so that a secret containing another one is masked as a whole.
            ordered = sorted(_secrets, key=len, reverse=True)
            _secrets_regex = re.compile("|".join(re.escape(secret) for secret in ordered))
        return _secrets_regex


#: The words without which none of the patterns can match in an ASCII text (lowercase): most texts have
#: none of them, and are not scanned by the patterns at all (every log line is redacted, so this matters).
#: Non-ASCII texts are always scanned: the patterns ignore case the Unicode way (e.g. the long s, U+017F, matches 's').
_PATTERN_TRIGGERS = (
    "-----begin",
    "bearer",
    "basic",
    "digest",
    "negotiate",
    "authorization",
    "token",
    "passw",
    "secret",
    "key",
    "://",
)
_TRIGGERS_REGEX = re.compile("|".join(re.escape(trigger) for trigger in _PATTERN_TRIGGERS))


def redact(text: str) -> str:
    """Mask the registered secrets and the typical secret-looking patterns in the text."""
    regex = _get_secrets_regex()
    if regex is not None:
        text = regex.sub(MASK, text)
    lowered = text.lower()
    if not text.isascii() or _TRIGGERS_REGEX.search(lowered):
        for pattern in _PATTERNS:
            text = pattern.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return text


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact(value.decode("utf-8", errors="replace"))
    if isinstance(value, Mapping):
        return {key: _redact_value(val) for key, val in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(val) for val in value]
    return value


class SecretsFilter(logging.Filter):
    """
    Mask the secrets in the records: in messages, their arguments, exceptions, and string extras.

    The message is rendered with its arguments and then masked (so the arguments are consumed).
    The record is modified in place, so the handlers down the line see the masked record.
    It never filters the records out.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format: let the handler report it as usual, but masked
            message = f"{record.msg!r} % {record.args!r}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        for key in vars(record).keys() - _NOT_EXTRAS:  # the user's extras only
            val = getattr(record, key)
            if isinstance(val, str | bytes | Mapping):
                setattr(record, key, _redact_value(val))
        return True


# -------------------------------------------------------------------------------------------------
# Formatters.
# -------------------------------------------------------------------------------------------------


def _object_prefix(ref: Any) -> str | None:
    if not isinstance(ref, Mapping):
        return None
    name = ref.get("name")
    namespace = ref.get("namespace")
    if namespace and name:
        return f"[{namespace}/{name}]"
    elif name:
        return f"[{name}]"
    return None


def prefixed(record: logging.LogRecord, prefix: bool) -> logging.LogRecord:
    """A copy of the record with the message rendered (and prefixed with the object if needed)."""
    message = record.getMessage()
    if prefix:
        object_prefix = _object_prefix(getattr(record, "k8s_ref", None))
        if object_prefix:
            message = f"{object_prefix} {message}"
    clone = object.__new__(type(record))  # a shallow copy, as copy.copy() makes it, at a fraction of its cost
    clone.__dict__.update(record.__dict__)
    clone.msg = message
    clone.args = None
    return clone


class ObjectTextFormatter(logging.Formatter):
    """A text formatter that prefixes the object-related messages with ``[namespace/name]`` if enabled."""

    def __init__(self, fmt: str | None = None, datefmt: str | None = None, *, prefix: bool = True) -> None:
        super().__init__(fmt, datefmt)
        self.log_prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(prefixed(record, self.log_prefix)))


def make_formatter(
    log_format: LogFormat = LogFormat.FULL,
    *,
    log_prefix: bool | None = None,
    log_refkey: str | None = None,
) -> logging.Formatter:
    """
    A formatter for the format. ``log_prefix=None`` means the format's default:
    prefixed for the text formats, not prefixed for JSON (the reference is in the refkey there).
    """
    if log_format is LogFormat.JSON:
        from kopf._cogs.helpers import jsonlogs  # imported on demand: ~5 ms at start-up for the text formats

        return jsonlogs.ObjectJsonFormatter(refkey=log_refkey, prefix=bool(log_prefix))
    prefix = True if log_prefix is None else log_prefix
    return ObjectTextFormatter(log_format.value, prefix=prefix)


# -------------------------------------------------------------------------------------------------
# Configuration.
# -------------------------------------------------------------------------------------------------


class _KopfStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A marker class: the handlers installed by us, to be replaced on re-configuration."""


def configure(
    debug: bool | None = None,
    verbose: bool | None = None,
    quiet: bool | None = None,
    log_format: LogFormat = LogFormat.FULL,
    log_prefix: bool | None = False,
    log_refkey: str | None = None,
) -> None:
    """
    Configure the logging of the process: the levels, the format, and the output to stderr.

    * ``debug``: everything, including the asyncio/aiohttp internals and the API traffic.
    * ``verbose``: everything of the framework, but not the low-level libraries.
    * ``quiet``: only the warnings and errors.
    * none of them: the normal processing logs (info and above).

    ``log_prefix=None`` means the format's default (see :func:`make_formatter`).
    Repeated calls replace the handler installed by the previous call; other handlers
    of the root logger are kept as they are. The secrets are masked in all the output.
    """
    log_level = logging.DEBUG if debug or verbose else logging.WARNING if quiet else logging.INFO
    formatter = make_formatter(log_format, log_prefix=log_prefix, log_refkey=log_refkey)

    handler = _KopfStreamHandler()
    handler.setFormatter(formatter)
    handler.addFilter(SecretsFilter())

    root = logging.getLogger()
    for old_handler in list(root.handlers):
        if isinstance(old_handler, _KopfStreamHandler):
            root.removeHandler(old_handler)
    root.addHandler(handler)
    root.setLevel(log_level)

    # The low-level libraries only speak in the debug mode; otherwise, only their problems are shown.
    for name in LOW_LEVEL_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.WARNING)
