"""BUG (daemons): the daemon ignores its stop-flag (and has no cancellation timeout): it never ends."""

import asyncio

import kopf


@kopf.daemon("gadgets")
async def monitor(**_):
    while True:  # noqa: ASYNC110 - the planted bug: no stop-flag
        await asyncio.sleep(10)
