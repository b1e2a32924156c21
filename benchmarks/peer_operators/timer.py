"""A timer on every object: the memory of the framework per object with a timer running."""

import kopf


@kopf.timer("kopfexamples", interval=60.0)
def tick_fn(**_):
    return {"ticked": True}
