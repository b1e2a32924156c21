"""Peering: operators with priorities over the simulated cluster, freezing & resuming, in virtual time."""
