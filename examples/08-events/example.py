"""Kubernetes events about the handled objects: ``kopf.info``, ``kopf.warn``, ``kopf.exception``, and log lines.

The operator checks the endpoints listed in a KopfExample's ``spec.items`` (``host:port`` strings) and
tells what it found as events of the object, which ``kubectl describe`` shows next to the object:

- ``kopf.info`` for the summary (type Normal),
- ``kopf.warn`` for duplicated endpoints (type Warning),
- ``kopf.exception`` for the endpoints that cannot be parsed, with the error (type Error).

The log lines of the handlers (the ``logger`` kwarg) become events too, from the level in
``settings.posting.level`` up (INFO by default), so the DEBUG lines stay in the operator's log only.
The level filters the explicit events as well: with ``settings.posting.level = logging.WARNING``,
``kopf.info`` would post nothing, while ``kopf.warn`` and ``kopf.exception`` would.
"""

from typing import Any

import kopf


def parse_endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r} is not host:port")
    number = int(port)
    if not 0 < number < 65536:
        raise ValueError(f"port {number} is out of range")
    return host, number


@kopf.on.create("kopfexamples")
@kopf.on.update("kopfexamples", field="spec.items")
def check_endpoints(body: kopf.Body, spec: kopf.Spec, logger: kopf.Logger, **_: Any) -> None:
    items = list(spec.get("items", []))
    logger.debug(f"Checking {len(items)} endpoints.")  # below the posting level: only in the log

    duplicates = sorted({item for item in items if items.count(item) > 1})
    if duplicates:
        kopf.warn(body, reason="DuplicateEndpoints", message=f"Listed more than once: {', '.join(duplicates)}.")

    valid = 0
    for item in items:
        try:
            parse_endpoint(item)
        except ValueError as exc:
            kopf.exception(body, reason="BadEndpoint", message=f"Cannot use the endpoint {item!r}.", exc=exc)
        else:
            valid += 1

    kopf.info(body, reason="EndpointsChecked", message=f"{valid} of {len(items)} endpoints are usable.")
    if not valid:
        logger.warning("No usable endpoints.")  # at the posting level: an event too
