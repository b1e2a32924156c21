"""Peering: several instances of one operator, of which only the highest-priority one is at work.

Operators that serve the same resources would handle the same objects twice. With peering, each
running operator keeps a record of itself (its priority, when it was last seen) in a peering object,
a ``KopfPeering`` in the served namespace (``ClusterKopfPeering`` for cluster-wide operators); the ones
with a lower priority than another live peer pause, and resume when it is gone. ``kopf freeze`` adds
a temporary peer of a given priority, e.g. to pause the deployed operator while debugging locally.

The startup handler picks the peering object ``example`` (see ``peering.yaml`` beside this file), and
makes it mandatory: without it, the operator fails instead of running unaware of its peers. An operator
started with ``--standalone`` ignores peering altogether (as do the operators in the framework's tests,
unless given settings). Each handled object records which operator (by priority) has handled it.
"""

from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.peering.name = "example"
    settings.peering.mandatory = True
    memo.priority = settings.peering.priority  # e.g. from `kopf run --priority=N`


@kopf.on.create("kopfexamples")
def record_handler(memo: kopf.Memo, **_: Any) -> dict[str, int]:
    return {"priority": memo.priority}
