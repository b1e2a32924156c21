"""Correct, with time: a timer observes the spec and stamps ``status.lastReconciled`` every minute.

The stamp changes on every tick and differs between two correct runs: it is noise, both for settling (an
object whose only changes are timestamps has settled) and for the comparisons (learned, no ``mask=`` needed).
"""

import datetime

import kopf


@kopf.timer("gadgets", interval=60)
def reconcile(spec, patch, **_):
    patch.status["size"] = spec.get("size", 0)
    patch.status["lastReconciled"] = datetime.datetime.now(datetime.UTC).isoformat()
