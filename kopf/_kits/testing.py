"""
The testing plugin's face on kopf: all that ``pytest_kopf`` may use beyond kopf's public API.

The plugin runs an operator in-process, in a test's own loop, and looks at what it is doing:
for that, it needs a few parts of kopf that operators never see (the operator's memories and
insights, its vault, the clock of its timestamps ...). They are named here, on purpose and with
names that say what the plugin uses them for, so that kopf's internals (``kopf._cogs``,
``kopf._core``) can be rearranged freely as long as this module keeps its promises. The plugin
imports kopf only via :mod:`kopf` and this module (an import-linter contract holds it to that).

Why not :mod:`kopf.testing`: that one is the public, documented toolkit of operator developers
(:class:`kopf.testing.KopfRunner`); what is here is the plumbing of one sibling package, released
together with kopf, with no promise to anyone else.

What is here, by what the plugin does with it:

* running an operator in a test's loop: :class:`Insights` (what it serves: watched to know when
  it is ready), :class:`ResourceMemories` (its memories of the objects: kept to look at its daemons
  & timers), :class:`Vault` (its credentials, pre-populated in sim mode), :class:`Activity` (which
  handlers are its logins), ``handles_os_signals`` (a context var: ``False`` keeps the operator off
  the process's signals, so that Ctrl+C interrupts pytest), :func:`pin_utcnow_to_loop` (its
  timestamps follow the virtual clock of the test's loop), :func:`set_sync_event_waiter` (the sync
  daemons' ``stopped.wait(t)`` wait in virtual time);
* its readiness: :func:`watcher_dimensions` (what it will watch), :func:`build_webhooks` and
  ``WEBHOOK_CONFIGURATION_RESOURCES`` (which webhook configurations it will manage);
* admission in-process (the simulated apiserver calls the operator's webhooks directly):
  :class:`AdmissionSettings`, :class:`WebhookServerLike`, :class:`AdmissionReviewRequest`,
  :func:`inject_handler_id`;
* the scheduled daemons & timers of a running operator: :class:`DaemonsMemory`, :class:`TimerHandler`;
* the current handler, object and change, to trace requests and reads to the handlers that make them and to
  the change they are made for: :func:`current_handler_id`, :func:`get_current_body`,
  :func:`current_changing_reason`;
* the diffs of objects as the handlers see them: :func:`diff_objects`, :func:`iter_object_diff`; whether an object
  is in scope of the change-detecting handlers at all (:func:`in_changing_scope`: kopf leaves the others alone);
* real clusters: :class:`KubeconfigLogin`, :func:`login_with_kubeconfig_context`,
  :func:`kubeconfig_paths` (the kubeconfig contexts), :func:`make_api_session` (the test's own API
  session with the operator's credentials), :class:`APIError`, and the discovery
  (``AGGREGATED_DISCOVERY_ACCEPT``, :class:`DiscoveryDocument`, :func:`decode_discovery`,
  :func:`parse_resource_list`).
"""

from kopf._cogs.aiokits.clock import pin_epoch as pin_utcnow_to_loop
from kopf._cogs.aiokits.syncwaits import set_event_waiter as set_sync_event_waiter
from kopf._cogs.clients.auth import make_session as make_api_session
from kopf._cogs.clients.errors import APIError
from kopf._cogs.clients.scanning import AGGREGATED_ACCEPT as AGGREGATED_DISCOVERY_ACCEPT
from kopf._cogs.clients.scanning import DiscoveryDocument, decode_discovery, parse_resource_list
from kopf._cogs.configs.configuration import AdmissionSettings, WebhookServerLike
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.current import get_current_body
from kopf._cogs.structs.diffs import diff as diff_objects
from kopf._cogs.structs.diffs import diff_iter as iter_object_diff
from kopf._cogs.structs.reviews import Request as AdmissionReviewRequest
from kopf._core.actions.execution import current_changing_reason, current_handler_id
from kopf._core.engines.admission import CONFIGURATION_RESOURCES as WEBHOOK_CONFIGURATION_RESOURCES
from kopf._core.engines.admission import build_webhooks, inject_handler_id
from kopf._core.engines.daemons import DaemonsMemory
from kopf._core.intents.causes import Activity
from kopf._core.intents.handlers import TimerHandler
from kopf._core.intents.logins.kubeconfiglogin import KubeconfigLogin, login_with_kubeconfig_context
from kopf._core.intents.logins.kubeconfigs import kubeconfig_paths
from kopf._core.reactor.memories import ResourceMemories
from kopf._core.reactor.observation import Insights
from kopf._core.reactor.orchestration import watcher_dimensions
from kopf._core.reactor.processing import in_changing_scope
from kopf._core.reactor.running import os_signals_var as handles_os_signals

__all__ = [
    "AGGREGATED_DISCOVERY_ACCEPT",
    "WEBHOOK_CONFIGURATION_RESOURCES",
    "APIError",
    "Activity",
    "AdmissionReviewRequest",
    "AdmissionSettings",
    "DaemonsMemory",
    "DiscoveryDocument",
    "Insights",
    "KubeconfigLogin",
    "ResourceMemories",
    "TimerHandler",
    "Vault",
    "WebhookServerLike",
    "build_webhooks",
    "current_changing_reason",
    "current_handler_id",
    "decode_discovery",
    "diff_objects",
    "get_current_body",
    "handles_os_signals",
    "in_changing_scope",
    "inject_handler_id",
    "iter_object_diff",
    "kubeconfig_paths",
    "login_with_kubeconfig_context",
    "make_api_session",
    "parse_resource_list",
    "pin_utcnow_to_loop",
    "set_sync_event_waiter",
    "watcher_dimensions",
]
