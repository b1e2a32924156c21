"""
Time in the simulator: the cluster's wall clock and identities, and the event loop's virtual time.

The bottom layer: it imports nothing else of kopf_sim. ``clock`` gives the store its timestamps and
uids (a manual clock and seeded uids make runs reproducible); ``loopclock`` is the clock of an event loop
as an interface; ``virtualtime`` is the asyncio event loop whose clock jumps to the next timer when idle.
"""
