"""The built-in controllers of the simulated cluster: workloads, pods on simulated nodes, services, volumes.

A :class:`ControllerManager` runs them for one :class:`~kopf_sim.store.cluster.Cluster` in its event loop
(virtual time under the pytest plugin); each controller can be switched off, and tests steer the
pods' fates with :class:`Fate` rules. See ``docs/sim.md`` for what is simulated and what is not.
"""

from __future__ import annotations

from .fates import Fate, FateRule
from .manager import ControllerManager
from .settings import CONTROLLERS, ControllerSettings, parse_selection

__all__ = ["CONTROLLERS", "ControllerManager", "ControllerSettings", "Fate", "FateRule", "parse_selection"]
