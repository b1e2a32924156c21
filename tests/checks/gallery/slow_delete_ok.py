"""Correct, and slow: a sync delete handler that takes 30 (virtual) seconds to release what the gadget held.

A graceful stop of the operator while it runs waits for it, as a real process waits for its threads at exit.
"""

import time

import kopf


@kopf.on.create("gadgets")
def create_fn(spec, **_):
    return {"size": spec.get("size", 0)}


@kopf.on.delete("gadgets")
def release(name, logger, **_):
    time.sleep(30)  # e.g. draining connections
    logger.info(f"Released {name}.")
