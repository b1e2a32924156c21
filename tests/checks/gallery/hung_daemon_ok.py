"""The correct twin of hung_daemon_bug.py: the daemon sleeps on its stop-flag, so it ends when asked to."""

import kopf


@kopf.daemon("gadgets")
async def monitor(stopped, **_):
    while not stopped:
        await stopped.wait(10)
