"""
Logging: the formats, the levels, the per-object loggers, and the redaction of secrets.
"""

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import jsonlogs, loggers
from kopf._cogs.helpers.loggers import LogFormat, SecretsFilter, configure, make_formatter, redact, register_secret
from kopf._core.actions.loggers import LocalObjectLogger, ObjectLogger, event_sink_var, is_postable

BODY = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"namespace": "default", "name": "kopf-example-1", "uid": "uid-123"},
    "spec": {"field": "value"},
}
CLUSTER_BODY = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1", "uid": "uid-ns"}}
REF = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "name": "kopf-example-1",
    "uid": "uid-123",
    "namespace": "default",
}

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----\n"
)


@pytest.fixture(autouse=True)
def restored_logging() -> Iterator[None]:
    """Keep the process-wide logging as it was: pytest and other tests rely on it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in loggers.LOW_LEVEL_LOGGERS}
    # The operators of other tests (in this process) lower the objects' logger to the posting level: undo it here.
    objects_logger = logging.getLogger("kopf.objects")
    objects_level = objects_logger.level
    objects_logger.setLevel(logging.NOTSET)
    loggers.forget_secrets()
    yield
    objects_logger.setLevel(objects_level)
    loggers.forget_secrets()
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    for name, old_level in levels.items():
        logging.getLogger(name).setLevel(old_level)


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def records(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines(capsys)]


# -- formats --


def test_log_format_values() -> None:
    assert LogFormat.PLAIN.value == "%(message)s"
    assert LogFormat.FULL.value == "[%(asctime)s] %(name)-20.20s [%(levelname)-8.8s] %(message)s"
    assert LogFormat.JSON.value == "-json-"
    assert LogFormat["JSON"] is LogFormat.JSON


def test_full_format(capsys: pytest.CaptureFixture[str]) -> None:
    configure(verbose=True, log_format=LogFormat.FULL)
    logging.getLogger("kopf.activities.authentication").info("Initial authentication has been initiated.")
    logging.getLogger("kopf.x").debug("Debugging %s.", "things")
    out = lines(capsys)
    assert len(out) == 2
    assert re.fullmatch(
        r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] kopf\.activities\.auth "
        r"\[INFO    \] Initial authentication has been initiated\.",
        out[0],
    )
    assert re.fullmatch(r"\[[^]]+\] kopf\.x {15}\[DEBUG   \] Debugging things\.", out[1])


def test_plain_format(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.PLAIN)
    logging.getLogger("kopf.x").info("Hello, %s!", "world")
    assert lines(capsys) == ["Hello, world!"]


def test_json_format_of_a_plain_record(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.JSON)
    logging.getLogger("kopf.x").info("Initial authentication has been initiated.")
    [record] = records(capsys)
    assert list(record) == ["message", "severity", "timestamp"]
    assert record["message"] == "Initial authentication has been initiated."
    assert record["severity"] == "info"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", record["timestamp"])


def test_json_format_with_user_extras(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.JSON)
    logging.getLogger("kopf.x").warning("Hi.", extra={"custom": {"a": 1}, "number": 5})
    [record] = records(capsys)
    assert record["custom"] == {"a": 1}
    assert record["number"] == 5
    assert record["severity"] == "warning"


def test_json_format_with_exception(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.JSON)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("kopf.x").exception("Failed.")
    [record] = records(capsys)
    assert record["message"] == "Failed."
    assert record["severity"] == "error"
    assert "ValueError: boom" in json.dumps(record)


# -- object prefixes & references --


@pytest.mark.parametrize(
    ("log_format", "log_prefix", "expected"),
    [
        (LogFormat.PLAIN, None, "[default/kopf-example-1] Resuming is in progress."),
        (LogFormat.PLAIN, True, "[default/kopf-example-1] Resuming is in progress."),
        (LogFormat.PLAIN, False, "Resuming is in progress."),
    ],
)
def test_object_prefix_in_text(
    capsys: pytest.CaptureFixture[str],
    log_format: LogFormat,
    log_prefix: bool | None,
    expected: str,
) -> None:
    configure(verbose=True, log_format=log_format, log_prefix=log_prefix)
    ObjectLogger(body=BODY, settings=OperatorSettings()).debug("Resuming is in progress.")
    assert lines(capsys) == [expected]


def test_object_prefix_in_full_format(capsys: pytest.CaptureFixture[str]) -> None:
    configure(verbose=True, log_prefix=None)
    ObjectLogger(body=BODY, settings=OperatorSettings()).debug("Resuming is in progress.")
    [line] = lines(capsys)
    assert line.endswith("] kopf.objects         [DEBUG   ] [default/kopf-example-1] Resuming is in progress.")


def test_configure_defaults_to_no_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.PLAIN)  # the documented signature's default: log_prefix=False
    ObjectLogger(body=BODY, settings=OperatorSettings()).info("Hello.")
    assert lines(capsys) == ["Hello."]


def test_object_prefix_of_cluster_scoped_objects(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.PLAIN, log_prefix=True)
    ObjectLogger(body=CLUSTER_BODY, settings=OperatorSettings()).info("Hello.")
    assert lines(capsys) == ["[ns1] Hello."]


def test_no_prefix_for_non_object_records(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.PLAIN, log_prefix=True)
    logging.getLogger("kopf.x").info("Hello.")
    assert lines(capsys) == ["Hello."]


def test_json_object_reference(capsys: pytest.CaptureFixture[str]) -> None:
    configure(verbose=True, log_format=LogFormat.JSON, log_prefix=None)
    ObjectLogger(body=BODY, settings=OperatorSettings()).debug("Resuming is in progress: %s", "ok")
    [record] = records(capsys)
    assert list(record) == ["message", "object", "severity", "timestamp"]
    assert record["message"] == "Resuming is in progress: ok"  # not prefixed by default in JSON
    assert record["object"] == REF
    assert record["severity"] == "debug"


def test_json_object_reference_under_a_custom_refkey(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.JSON, log_refkey="k8s-obj")
    ObjectLogger(body=BODY, settings=OperatorSettings()).info("Hello.")
    [record] = records(capsys)
    assert record["k8s-obj"] == REF
    assert "object" not in record


def test_json_with_prefix_enabled(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.JSON, log_prefix=True)
    ObjectLogger(body=BODY, settings=OperatorSettings()).info("Hello.")
    [record] = records(capsys)
    assert record["message"] == "[default/kopf-example-1] Hello."
    assert record["object"] == REF


def test_json_keeps_the_user_extras_of_object_loggers(capsys: pytest.CaptureFixture[str]) -> None:
    configure(log_format=LogFormat.JSON)
    logger = ObjectLogger(body=BODY, settings=OperatorSettings())
    logger.info("Hello.", extra={"attempt": 3, "k8s_ref": {"name": "forged"}})
    [record] = records(capsys)
    assert record["attempt"] == 3
    assert record["object"] == REF  # the user cannot forge the object's identity
    assert "settings" not in record and "k8s_skip" not in record and "k8s_ref" not in record


def test_make_formatter_kinds() -> None:
    assert isinstance(make_formatter(LogFormat.JSON), jsonlogs.ObjectJsonFormatter)
    assert isinstance(make_formatter(LogFormat.PLAIN), loggers.ObjectTextFormatter)
    assert make_formatter(LogFormat.PLAIN).log_prefix is True  # type: ignore[attr-defined]
    assert make_formatter(LogFormat.JSON).log_prefix is False  # type: ignore[attr-defined]


# -- object loggers --


def test_object_logger_snapshots_the_reference() -> None:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "ns"}}
    logger = ObjectLogger(body=body, settings=OperatorSettings())
    body["metadata"]["name"] = "changed"
    assert logger.k8s_ref == {"apiVersion": "v1", "kind": "Pod", "name": "p1", "namespace": "ns"}
    assert repr(logger) == "<ObjectLogger ns/p1>"


def test_object_logger_records(caplog: pytest.LogCaptureFixture) -> None:
    settings = OperatorSettings()
    with caplog.at_level(logging.DEBUG, logger="kopf.objects"):
        ObjectLogger(body=BODY, settings=settings).info("Posted.")
        LocalObjectLogger(body=BODY, settings=settings).info("Not posted.")
    posted, local = caplog.records
    assert posted.name == local.name == "kopf.objects"
    assert posted.k8s_ref == local.k8s_ref == REF  # type: ignore[attr-defined]
    assert posted.k8s_skip is False  # type: ignore[attr-defined]
    assert local.k8s_skip is True  # type: ignore[attr-defined]
    assert posted.settings is local.settings is settings  # type: ignore[attr-defined]
    assert is_postable(posted)
    assert not is_postable(local)


def test_postability_by_settings(caplog: pytest.LogCaptureFixture) -> None:
    settings = OperatorSettings()
    settings.posting.level = logging.WARNING
    logger = ObjectLogger(body=BODY, settings=settings)
    with caplog.at_level(logging.DEBUG, logger="kopf.objects"):
        logger.info("Too low.")
        logger.warning("High enough.")
        logger.error("Even higher.")
    assert [is_postable(record) for record in caplog.records] == [False, True, True]

    settings.posting.enabled = False
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="kopf.objects"):
        logger.error("Disabled.")
    assert not is_postable(caplog.records[0])


def test_posted_messages_of_exceptions_have_the_traceback() -> None:
    """As the published framework posts them: the message, a newline, and the traceback as logged."""
    posted: list[tuple[str, str]] = []
    token = event_sink_var.set(lambda ref, type_, reason, message: posted.append((type_, message)))
    try:
        logger = ObjectLogger(body=BODY, settings=OperatorSettings())
        try:
            raise ValueError("boom")
        except ValueError as e:
            logger.exception("Failed: %s", "x")
            error = e
        logger.error("Explicit.", exc_info=error)
        logger.error("No traceback.")
        logger.error("Nothing is being handled.", exc_info=True)
    finally:
        event_sink_var.reset(token)
    [(type1, message1), (type2, message2), (_, message3), (_, message4)] = posted
    assert type1 == type2 == "Error"
    assert message1.startswith("Failed: x\nTraceback (most recent call last):\n")
    assert message2.startswith("Explicit.\nTraceback (most recent call last):\n")
    assert message1.endswith("\nValueError: boom") and message2.endswith("\nValueError: boom")
    assert 'raise ValueError("boom")' in message1
    assert message3 == "No traceback."
    assert message4 == "Nothing is being handled."


def test_plain_records_are_not_postable() -> None:
    record = logging.makeLogRecord({"msg": "hello", "levelno": logging.ERROR})
    assert not is_postable(record)


# -- levels --


@pytest.mark.parametrize(
    ("kwargs", "root_level", "lowlevel_level"),
    [
        (dict(), logging.INFO, logging.WARNING),
        (dict(quiet=True), logging.WARNING, logging.WARNING),
        (dict(verbose=True), logging.DEBUG, logging.WARNING),
        (dict(debug=True), logging.DEBUG, logging.DEBUG),
        (dict(debug=True, quiet=True), logging.DEBUG, logging.DEBUG),
    ],
)
def test_levels(kwargs: dict[str, Any], root_level: int, lowlevel_level: int) -> None:
    configure(**kwargs)
    assert logging.getLogger().level == root_level
    assert logging.getLogger("asyncio").level == lowlevel_level
    assert logging.getLogger("aiohttp").level == lowlevel_level


def test_levels_filter_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    configure(quiet=True, log_format=LogFormat.PLAIN)
    logging.getLogger("kopf.x").info("Info.")
    logging.getLogger("kopf.x").warning("Warning.")
    logging.getLogger("asyncio").debug("Asyncio internals.")
    assert lines(capsys) == ["Warning."]

    configure(verbose=True, log_format=LogFormat.PLAIN)
    logging.getLogger("kopf.x").debug("Debug.")
    logging.getLogger("asyncio").debug("Asyncio internals.")
    logging.getLogger("aiohttp.client").debug("Traffic.")
    assert lines(capsys) == ["Debug."]

    configure(debug=True, log_format=LogFormat.PLAIN)
    logging.getLogger("asyncio").debug("Asyncio internals.")
    logging.getLogger("aiohttp.client").debug("Traffic.")
    assert lines(capsys) == ["Asyncio internals.", "Traffic."]


def test_reconfiguration_replaces_only_our_handler() -> None:
    other = logging.NullHandler()
    logging.getLogger().addHandler(other)
    try:
        configure()
        configure(log_format=LogFormat.JSON)
        ours = [handler for handler in logging.getLogger().handlers if isinstance(handler, loggers._KopfStreamHandler)]
        assert len(ours) == 1
        assert isinstance(ours[0].formatter, jsonlogs.ObjectJsonFormatter)
        assert other in logging.getLogger().handlers
    finally:
        logging.getLogger().removeHandler(other)


# -- redaction --

SECRETS = [
    "sup3r-s3cret-t0ken-value",
    "p4ssw0rd-of-admin",
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
]


def emit_secrets(logger: logging.Logger | logging.LoggerAdapter[Any]) -> None:
    token, password, _ = SECRETS
    logger.debug("Using the token %s for the requests.", token)
    logger.debug(f"Authorization: Bearer {token}")
    logger.debug("Headers: %r", {"Authorization": f"Bearer {token}", "Accept": "application/json"})
    logger.debug("Credentials: %r", {"username": "admin", "password": password})
    logger.debug("The client key:\n%s", PRIVATE_KEY)
    logger.debug("The client key as bytes: %r", PRIVATE_KEY.encode())
    logger.info("Login via URL https://admin:%s@cluster.local/", password)
    logger.info("Extras.", extra={"token_info": f"token={token}", "nested": {"pwd": password}})
    try:
        raise RuntimeError(f"Rejected: {token}")
    except RuntimeError:
        logger.exception("Failure with the token.")
    logger.info("Stack.", stack_info=True)  # this very function's frame with the secrets in locals is not shown


@pytest.mark.parametrize("log_format", list(LogFormat))
def test_secrets_never_reach_the_output(capsys: pytest.CaptureFixture[str], log_format: LogFormat) -> None:
    token, password, _ = SECRETS
    register_secret(token)
    register_secret(password)
    configure(debug=True, log_format=log_format, log_prefix=True)
    emit_secrets(logging.getLogger("kopf._cogs.clients.auth"))
    emit_secrets(ObjectLogger(body=BODY, settings=OperatorSettings()))
    output = capsys.readouterr().err
    assert "Using the token *** for the requests." in output
    assert "admin" in output  # usernames stay: only the secrets are masked
    for secret in SECRETS:
        assert secret not in output
    assert "PRIVATE KEY-----" in output  # the PEM header stays, to explain what was masked
    assert "VTLw7onLRnrq0" not in output


def test_unregistered_secrets_are_masked_by_patterns() -> None:
    assert redact("Authorization: Bearer abc.def-ghi") == "Authorization: Bearer ***"
    assert redact("{'authorization': 'Basic YWRtaW46cGFzcw=='}") == "{'authorization': 'Basic ***'}"
    assert redact("authorization=opaque-value") == "authorization=***"
    assert redact("token=abc&other=1") == "token=***&other=1"
    assert redact('"password": "hunter2"') == '"password": "***"'
    assert redact("'client-key-data': b'abcdef'") == "'client-key-data': b'***'"
    assert redact("access_token: xyz") == "access_token: ***"
    assert redact("https://user:pa55@host/path") == "https://user:***@host/path"
    assert (
        redact("x -----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE----- y")
        == "x -----BEGIN CERTIFICATE-----*** y"
    )


def test_patterns_ignore_case_the_unicode_way() -> None:
    # A shortcut skips the patterns for ASCII texts without their trigger words; these are not ASCII.
    assert redact("\u017fecret=abc") == "\u017fecret=***"  # the long s (U+017F) matches 's' when ignoring case
    assert redact("pa\u017f\u017fword: xyz, caf\u00e9") == "pa\u017f\u017fword: ***, caf\u00e9"
    assert redact("TOKEN=abc") == "TOKEN=***"  # and ASCII in any case


def test_innocent_text_is_kept() -> None:
    texts = [
        "Handler create_fn succeeded.",
        "{'token': None, 'password': null}",
        "The token has expired; re-authenticating.",
        "Login handlers: 2.",
        "password: ***",
    ]
    for text in texts:
        assert redact(text) == text


def test_redaction_is_idempotent() -> None:
    register_secret("registered-secret")
    text = "{'Authorization': 'Bearer xyz', 'token': 'registered-secret', 'client_key_data': b'abc'}"
    once = redact(text)
    assert redact(once) == once
    assert "xyz" not in once and "registered-secret" not in once and "abc" not in once


def test_registered_secret_variants() -> None:
    register_secret(PRIVATE_KEY.encode())
    register_secret(b"\xff\xfe-binary-secret")
    assert "MIIEow" not in redact(repr(PRIVATE_KEY))  # the escaped newlines
    assert "MIIEow" not in redact(json.dumps({"key": PRIVATE_KEY}))
    assert "MIIEow" not in redact("line: MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun")
    import base64

    assert redact(base64.b64encode(PRIVATE_KEY.encode()).decode()) == "***"
    assert redact(base64.b64encode(b"\xff\xfe-binary-secret").decode()) == "***"


def test_short_secrets_are_not_masked_verbatim() -> None:
    register_secret("t")
    register_secret("")
    register_secret(None)
    assert redact("the text") == "the text"
    assert redact("token: t") == "token: ***"  # but still in context


def test_secrets_filter_on_other_handlers(caplog: pytest.LogCaptureFixture) -> None:
    register_secret("filtered-secret-value")
    caplog.handler.addFilter(SecretsFilter())
    try:
        with caplog.at_level(logging.INFO, logger="kopf.x"):
            logging.getLogger("kopf.x").info(
                "Secret: %s", "filtered-secret-value", extra={"detail": "also filtered-secret-value"}
            )
    finally:
        caplog.handler.filters.clear()
    [record] = caplog.records
    assert record.getMessage() == "Secret: ***"
    assert record.detail == "also ***"  # type: ignore[attr-defined]
    assert "filtered-secret-value" not in caplog.text


def test_forgetting_secrets() -> None:
    register_secret("forgettable-secret")
    assert redact("forgettable-secret") == "***"
    loggers.forget_secrets()
    assert redact("forgettable-secret") == "forgettable-secret"


def test_secrets_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loggers, "MAX_SECRETS", 10)
    for i in range(20):
        register_secret(f"secret-number-{i:03d}")
    assert redact("secret-number-019") == "***"
    assert redact("secret-number-000") == "secret-number-000"
