"""Peering: the operator keeps its record in the peering object; another (fake) peer with a higher priority."""

from compat_record import record

import kopf


@kopf.on.startup()
def configure(settings, **_):
    settings.peering.name = "compat"
    settings.peering.priority = 10
    settings.peering.stealth = True


@kopf.on.create("kopfexamples")
def create_fn(name, **_):
    record("create_fn", name)
