"""How handlers fail, retry, and give up: three provisioning steps, each with its own error policy.

Every new KopfExample goes through three creation handlers. They are independent: one failing does
not stop the others, and each one's outcome is reported in the object's status (on success), in the
operator's log, and as a Kubernetes event on the object (on failures).

- ``parse_duration``: a malformed ``spec.duration`` never becomes valid by waiting, so the handler
  raises ``kopf.PermanentError``: it is not retried (not even after an operator restart).
- ``wait_for_approval``: waits for a person to approve the object with an annotation. It does not
  sleep: it raises ``kopf.TemporaryError`` with a delay and is called again later, with the object's
  fresh content; after ``timeout`` seconds of waiting, it gives up.
- ``register_in_catalogue``: an external service that may be down. Its errors are ordinary exceptions,
  which the framework retries after ``backoff`` seconds, at most ``retries`` times.

The delays are short so that the example can be watched (and tested against a real cluster) in
seconds; an operator in production would wait minutes.
"""

import collections
import re
from typing import Any

import kopf

APPROVAL = "example.kopf.dev/approved"
APPROVAL_RECHECK = 2  # seconds between the checks for the approval
APPROVAL_TIMEOUT = 10  # seconds to wait for the approval before giving up
CATALOGUE_RETRIES = 3  # attempts to register in the catalogue
CATALOGUE_BACKOFF = 1  # seconds between those attempts

UNITS = {"s": 1, "m": 60, "h": 3600}


@kopf.on.create("kopfexamples")
def parse_duration(spec: kopf.Spec, **_: Any) -> dict[str, int]:
    text = spec.get("duration", "")
    match = re.fullmatch(r"(\d+)([smh])", str(text))
    if match is None:
        raise kopf.PermanentError(f"Cannot parse the duration {text!r}: expected a number and s, m or h.")
    return {"seconds": int(match[1]) * UNITS[match[2]]}


@kopf.on.create("kopfexamples", timeout=APPROVAL_TIMEOUT)
def wait_for_approval(annotations: kopf.Annotations, retry: int, **_: Any) -> dict[str, Any]:
    if annotations.get(APPROVAL) != "true":
        raise kopf.TemporaryError(
            f"Not approved yet (check #{retry + 1}): annotate it with {APPROVAL}=true.", delay=APPROVAL_RECHECK
        )
    return {"approved": True, "checks": retry + 1}


class FlakyCatalogue:
    """Stands in for an external service: it refuses the first calls for an entry (``spec.outage`` of them)."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()

    def register(self, key: str, *, outage: int) -> str:
        self.calls[key] += 1
        if self.calls[key] <= outage:
            raise ConnectionError(f"The catalogue is unavailable (call #{self.calls[key]} for {key}).")
        return f"catalogue://{key}"


CATALOGUE = FlakyCatalogue()


@kopf.on.create("kopfexamples", retries=CATALOGUE_RETRIES, backoff=CATALOGUE_BACKOFF)
def register_in_catalogue(spec: kopf.Spec, namespace: str, name: str, retry: int, **_: Any) -> dict[str, Any]:
    entry = CATALOGUE.register(f"{namespace}/{name}", outage=int(spec.get("outage", 0)))
    return {"entry": entry, "attempts": retry + 1}
