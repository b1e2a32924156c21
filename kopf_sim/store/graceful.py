"""Graceful deletion of pods: the apiserver keeps a deleted pod until its kubelet has stopped it.

A DELETE of a pod bound to a node (and not finished) marks it with a ``deletionTimestamp`` in the
future (now + the grace period) and ``deletionGracePeriodSeconds``; the kubelet stops the containers
and then deletes it again with a zero grace period, which removes it. Unbound and finished pods,
and a grace period of 0 (``kubectl delete --force --grace-period=0``), remove it at once. A later
DELETE may shorten the grace period, never extend it. Other kinds have no grace period.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import ResourceType
from kopf_sim.timing.clock import format_timestamp

DEFAULT_GRACE_PERIOD = 30
PODS = ("", "pods")


def grace_period(rtype: ResourceType, obj: JsonDict, options: Mapping[str, Any]) -> int:
    """The seconds this DELETE gives the object to go away gracefully (0: at once)."""
    if rtype.storage_key != PODS:
        return 0
    spec = obj.get("spec") or {}
    given = options.get("gracePeriodSeconds")
    if given is not None and given != "":
        try:
            grace = int(given)
        except (TypeError, ValueError):
            raise errors.bad_request(f'gracePeriodSeconds: Invalid value: "{given}": must be an integer') from None
    else:
        grace = int(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_PERIOD) or 0)
    if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    return max(grace, 0)


def deletion_timestamp(now: datetime.datetime, grace: int) -> str:
    return format_timestamp(now + datetime.timedelta(seconds=grace))
