"""The admission chain of one store: who may write (authorizers), what changes the object, what may refuse it.

The write pipeline (:mod:`kopf_sim.store.pipeline`) asks it in the apiserver's order:
:meth:`AdmissionControl.authorize` first, then :meth:`AdmissionControl.mutate` (the mutating plugins in order;
the pipeline then applies the server's rules again to what they changed: schema defaulting, pruning,
validation), then :meth:`AdmissionControl.validate` (the validating plugins).

The plugins are lists, the extension points of the chain: the webhooks are there by default; admission
policies go before the validating webhooks (``validators.insert(0, …)``), as the apiserver runs them;
an authorizer (RBAC) goes into ``authorizers``. CEL rules of CRD schemas are part of the schema validation
(:mod:`kopf_sim.writes.schemas`), which runs both before and after mutation.
"""

from __future__ import annotations

from typing import Protocol

from kopf_sim.admission.attributes import Attributes, StoreView
from kopf_sim.admission.calling import InProcessHandler
from kopf_sim.admission.dispatching import MutatingWebhooks, ValidatingWebhooks, WebhookCaller
from kopf_sim.admission.policies import ValidatingPolicies
from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import StorageKey

__all__ = ["AdmissionControl", "Authorizer", "MutatingPlugin", "ValidatingPlugin"]


class Authorizer(Protocol):
    """Whether the request's user may make it (a 403 ``Forbidden`` if not); RBAC when it is enforced."""

    def authorize(self, verb: str, attrs: Attributes) -> None: ...


class MutatingPlugin(Protocol):
    #: The kinds whose objects make it active or not (a load asks :meth:`active` again after creating one).
    configured_by: frozenset[StorageKey]

    def active(self) -> bool:
        """Whether it may act on any write at all (the pipeline skips admission when no plugin may)."""

    async def mutate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> JsonDict | None:
        """The object as changed (or the same object, unchanged); a refusal is an ``ApiError``."""


class ValidatingPlugin(Protocol):
    configured_by: frozenset[StorageKey]

    def active(self) -> bool: ...

    async def validate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> None:
        """Nothing if the write may be stored as it is; a refusal is an ``ApiError``."""


class AdmissionControl:
    """Finds what applies to a write and asks it, as the apiserver's admission chain does."""

    def __init__(self, store: StoreView) -> None:
        self.store = store
        #: Webhooks served by coroutines in this process, by URL or by ``service:<ns>/<name>:<port><path>``.
        self.in_process: dict[str, InProcessHandler] = {}
        caller = WebhookCaller(store, self.in_process)
        self.authorizers: list[Authorizer] = []
        self.mutators: list[MutatingPlugin] = [MutatingWebhooks(caller)]
        #: The ValidatingAdmissionPolicies (their audit records: ``policies.audit``), before the webhooks.
        self.policies = ValidatingPolicies(store)
        self.validators: list[ValidatingPlugin] = [self.policies, ValidatingWebhooks(caller)]

    def register(self, url_or_service: str, handler: InProcessHandler) -> None:
        """Serve a webhook URL (or ``service:ns/name:port/path``) by an in-process coroutine."""
        self.in_process[url_or_service] = handler

    def unregister(self, url_or_service: str) -> None:
        self.in_process.pop(url_or_service, None)

    def active(self) -> bool:
        """Whether any plugin may act (else the pipeline skips admission: no views of the objects are made)."""
        for plugins in (self.mutators, self.validators):  # (loops, not any(): a load asks 100,000 times)
            for plugin in plugins:
                if plugin.active():
                    return True
        return False

    def configured_by(self) -> frozenset[StorageKey]:
        """The kinds whose objects make a plugin active or not: while none is written, :meth:`active` stays."""
        kinds: set[StorageKey] = set()
        for plugins in (self.mutators, self.validators):
            for plugin in plugins:
                kinds |= plugin.configured_by
        return frozenset(kinds)

    def authorize(self, verb: str, attrs: Attributes) -> None:
        for authorizer in self.authorizers:
            authorizer.authorize(verb, attrs)

    async def mutate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> JsonDict | None:
        for plugin in self.mutators:
            if plugin.active():
                obj = await plugin.mutate(attrs, obj, old, warnings)
        return obj

    async def validate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> None:
        for plugin in self.validators:
            if plugin.active():
                await plugin.validate(attrs, obj, old, warnings)
