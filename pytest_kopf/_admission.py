"""Admission webhooks of an operator under test, served in-process by the simulated apiserver (sim mode).

No certificates, no tunnels, no ports: the operator's webhook server is replaced by
:class:`InProcessWebhookServer`, which registers one in-process endpoint per admission
handler with the simulated apiserver's admission control (``kopf_cluster.sim.admission``),
at the URLs that the operator's configuration manager puts into the managed
validating/mutating webhook configurations (created through the simulated API, as an
operator does on a real cluster). :class:`SimAdmissionSettings` keeps this server in
place even if the operator's startup handlers set their own (e.g. ``kopf.WebhookServer()``):
their choice is remembered (``requested_server``), restored after the run, and used in
real mode, where the operator's own webhook settings apply as they are.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

from kopf import OperatorRegistry, WebhookClientConfig, WebhookFn
from kopf._kits.testing import AdmissionReviewRequest, AdmissionSettings, WebhookServerLike, inject_handler_id
from kopf_sim.admission.control import AdmissionControl

__all__ = ["DEFAULT_MANAGED", "InProcessWebhookServer", "SimAdmissionSettings"]

#: The name of the managed webhook configurations in sim mode, unless the operator names its own.
DEFAULT_MANAGED = "auto.kopf.dev"

JsonDict = dict[str, Any]


class InProcessWebhookServer:
    """A kopf webhook server that is the simulated apiserver itself: reviews go in-process, as JSON."""

    def __init__(self, control: AdmissionControl, registry: OperatorRegistry) -> None:
        self.control = control
        self.registry = registry
        self.url = f"https://kopf-operator-{secrets.token_hex(4)}.in-process/hooks"
        self.registered: list[str] = []

    async def __call__(self, fn: WebhookFn) -> AsyncIterator[WebhookClientConfig]:
        config: WebhookClientConfig = {"url": self.url}
        for handler in self.registry.webhooks.get_all_handlers():
            url = str(inject_handler_id(config, handler.id).get("url"))
            self.control.register(url, self._endpoint(fn, handler.id))
            self.registered.append(url)
        try:
            yield config
            await asyncio.Event().wait()  # serve until the operator stops
        finally:
            for url in self.registered:
                self.control.unregister(url)
            self.registered.clear()

    @staticmethod
    def _endpoint(fn: WebhookFn, webhook: str) -> Callable[[JsonDict], Awaitable[JsonDict]]:
        async def endpoint(review: JsonDict) -> JsonDict:
            response = await fn(cast(AdmissionReviewRequest, review), webhook=webhook, headers={}, sslpeer={})
            return cast(JsonDict, response)

        return endpoint


class SimAdmissionSettings(AdmissionSettings):
    """``settings.admission`` in sim mode: the in-process server always; the managed configurations always.

    What the operator assigns is kept in ``requested_server``/``requested_managed`` (the managed
    name is used if given; ``auto.kopf.dev`` otherwise), and put back by :meth:`restore`.
    """

    requested_server: WebhookServerLike | None
    requested_managed: str | None

    def __init__(self, original: AdmissionSettings, server: InProcessWebhookServer) -> None:
        # No dataclass __init__: the fields are properties here.
        self._sim_server = server
        self.requested_server: WebhookServerLike | None = original.server
        self.requested_managed: str | None = original.managed

    @property
    def server(self) -> WebhookServerLike | None:
        return cast(WebhookServerLike, self._sim_server)

    @server.setter
    def server(self, value: WebhookServerLike | None) -> None:
        self.requested_server = value

    @property
    def managed(self) -> str | None:
        return self.requested_managed or DEFAULT_MANAGED

    @managed.setter
    def managed(self, value: str | None) -> None:
        self.requested_managed = value

    def restore(self) -> AdmissionSettings:
        """The operator's own admission settings, as it has set them."""
        return AdmissionSettings(server=self.requested_server, managed=self.requested_managed)
