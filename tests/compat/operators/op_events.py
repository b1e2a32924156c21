"""The k8s-events: explicit ones (kopf.event/info/warn/exception) and the logged messages posted as events."""

import os

from compat_record import record

import kopf


@kopf.on.startup()
def configure(settings, **_):
    settings.posting.level = int(os.environ.get("COMPAT_POSTING_LEVEL", "20"))
    if os.environ.get("COMPAT_POSTING_LOGGERS"):
        settings.posting.loggers = True
    if os.environ.get("COMPAT_POSTING_DISABLED"):
        settings.posting.enabled = False


@kopf.on.create("kopfexamples")
def create_fn(name, body, logger, **_):
    record("create_fn", name)
    kopf.event(body, type="Custom", reason="Explicit", message="An explicit event.")
    kopf.event(body, type="Normal", reason="ExplicitNormal", message="An explicit normal event.")
    kopf.info(body, reason="Informed", message="An info event.")
    kopf.warn(body, reason="Warned", message="A warning event.")
    try:
        raise ValueError("boom")
    except ValueError:
        kopf.exception(body, reason="Excepted", message="An exception event:")
    logger.debug("A debug message.")
    logger.info("An info message.")
    logger.warning("A warning message.")
    logger.error("An error message.")
    return "done"
