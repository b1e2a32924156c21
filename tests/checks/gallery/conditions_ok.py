"""Correct, with time: a ``Ready`` condition with ``lastTransitionTime`` (when its status last flipped) and the
``observedGeneration`` it describes, as the Kubernetes API conventions have them."""

import datetime

import kopf


@kopf.on.create("gadgets")
@kopf.on.update("gadgets")
@kopf.on.resume("gadgets")
def ready(spec, status, meta, patch, **_):
    size = spec.get("size", 0)
    state = "True" if size > 0 else "False"
    previous = next((c for c in status.get("conditions", []) if c.get("type") == "Ready"), {})
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch.status["conditions"] = [
        {
            "type": "Ready",
            "status": state,
            "reason": "Sized" if size > 0 else "Empty",
            "message": f"{size} replica(s) wanted",
            "lastTransitionTime": previous.get("lastTransitionTime", now) if previous.get("status") == state else now,
            "observedGeneration": meta.get("generation"),
        }
    ]
