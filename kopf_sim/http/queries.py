"""Query parameters of list, watch and delete requests, checked as the apiserver checks them.

Integers must parse (and fit int64); ``resourceVersionMatch`` follows the apiserver's ``ListOptions``
rules (a 422 ``ListOptions.meta.k8s.io "" is invalid`` otherwise); a watch's ``timeoutSeconds`` is
bounded so that no timer overflows, whatever the client asks for.
"""

from __future__ import annotations

import re

from multidict import MultiMapping

from kopf_sim.kube import errors
from kopf_sim.writes.validation import forbidden, not_supported

#: The longest a watch stays open when asked for more (a real apiserver caps it by its request timeout too).
MAX_WATCH_SECONDS = 7 * 24 * 3600
_INT64 = (-(2**63), 2**63 - 1)
_MATCHES = ("Exact", "NotOlderThan", "")
_INTEGER = re.compile(r"[-+]?[0-9]{1,20}")
_VERSION = re.compile(r"[0-9]{1,20}")


def integer(query: MultiMapping[str], name: str) -> int | None:
    """An int64 parameter (None if absent or empty); a 400 if it is not an integer."""
    value = query.get(name)
    if value is None or value == "":
        return None
    text = value.strip()
    if not _INTEGER.fullmatch(text):
        raise errors.bad_request(f'{name}: Invalid value: "{value}": must be an integer')
    number = int(text)
    if not _INT64[0] <= number <= _INT64[1]:
        raise errors.bad_request(f'{name}: Invalid value: "{value}": value out of range')
    return number


def limit(query: MultiMapping[str]) -> int | None:
    """The page size of a list: a zero or negative limit means no limit, as etcd takes it."""
    value = integer(query, "limit")
    return value if value is not None and value > 0 else None


def watch_timeout(query: MultiMapping[str], default: float) -> float:
    """How long a watch stays open: the client's ``timeoutSeconds`` (bounded), or the server's default."""
    value = integer(query, "timeoutSeconds")
    if not value:
        return default
    return float(min(value, MAX_WATCH_SECONDS))


def check_list_options(query: MultiMapping[str], *, watch: bool) -> None:
    """``resourceVersion`` must be a version; ``resourceVersionMatch`` must fit the rest of the options."""
    version = query.get("resourceVersion", "")
    if version and not watch and not _VERSION.fullmatch(version):  # a watch's own check is the store's
        raise errors.bad_request(f'resourceVersion: Invalid value: "{version}": must be a non-negative integer')
    match = query.get("resourceVersionMatch", "")
    if watch and query.get("sendInitialEvents") is not None:  # a streamed list: its own rule
        if match != "NotOlderThan":
            raise errors.invalid(
                "ListOptions",
                "meta.k8s.io",
                "",
                [
                    forbidden(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    )
                ],
            )
        return
    if not match:
        return
    causes = []
    if watch:
        causes.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch"))
    if not version:
        causes.append(
            forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided")
        )
    if query.get("continue"):
        causes.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
    if match not in _MATCHES:
        causes.append(not_supported("resourceVersionMatch", match, _MATCHES))
    elif match == "Exact" and version == "0":
        causes.append(
            forbidden("resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
        )
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)
