"""The cluster IPs and node ports that the stored services hold, kept up to date at every commit.

The apiserver's allocators keep a bitmap of what is taken; so does the store here, so that allocating an
address is a few lookups from a random start (:func:`kopf_sim.writes.preparing`'s allocation) rather than a
scan of every service: loading 20,000 services costs each one the same, not a pass over all the others.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

from kopf_sim.kube.objects import JsonDict

__all__ = ["ServiceAllocations"]


class ServiceAllocations:
    """How many stored services hold each cluster IP and node port (a user may give one twice)."""

    def __init__(self) -> None:
        self._cluster_ips: collections.Counter[str] = collections.Counter()
        self._node_ports: collections.Counter[int] = collections.Counter()

    def cluster_ip_taken(self, address: str) -> bool:
        return address in self._cluster_ips

    def node_port_taken(self, port: int) -> bool:
        return port in self._node_ports

    def update(self, old: JsonDict | None, new: JsonDict | None) -> None:
        """A service's state changes from ``old`` to ``new`` (None: it is created, or removed)."""
        if old is not None:
            self._release(self._cluster_ips, _cluster_ips(old))
            self._release(self._node_ports, _node_ports(old))
        if new is not None:
            self._cluster_ips.update(_cluster_ips(new))
            self._node_ports.update(_node_ports(new))

    @staticmethod
    def _release(counts: collections.Counter[Any], values: Iterator[Any]) -> None:
        for value in values:
            counts[value] -= 1
            if counts[value] <= 0:
                del counts[value]


def _spec(service: JsonDict) -> JsonDict:
    spec = service.get("spec")
    return spec if isinstance(spec, dict) else {}


def _cluster_ips(service: JsonDict) -> Iterator[str]:
    address = _spec(service).get("clusterIP")
    if isinstance(address, str) and address:
        yield address


def _node_ports(service: JsonDict) -> Iterator[int]:
    for port in _spec(service).get("ports") or ():
        if isinstance(port, dict) and isinstance(port.get("nodePort"), int) and port["nodePort"]:
            yield port["nodePort"]
