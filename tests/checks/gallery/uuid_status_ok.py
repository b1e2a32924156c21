"""Correct, with randomness: an instance id (``uuid.uuid4()``) in the status, drawn once, and the size observed.

Two correct runs draw two ids: the checks learn ``status.instanceId`` as noise (no ``mask=`` needed).
"""

import uuid

import kopf


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
def identify(spec, status, patch, **_):
    patch.status["instanceId"] = status.get("instanceId") or str(uuid.uuid4())  # kept if a crash re-runs this
    patch.status["size"] = spec.get("size", 0)
