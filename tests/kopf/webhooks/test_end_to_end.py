"""End to end: the simulated apiserver calls the server as configured by the yielded client config."""

from __future__ import annotations

from typing import Any

from kopf._cogs.structs import reviews
from kopf._kits.webhooks import (
    WebhookServer,
)

from .helpers import Serve


#
# End to end: the simulated apiserver calls the server as configured by the yielded client config.
#
async def test_the_simulated_apiserver_calls_the_server(serve: Serve) -> None:
    from kopf_sim.http.app import build_app
    from kopf_sim.store.cluster import Cluster
    from kopf_sim.transports.inmemory import InMemoryServer

    async def deny_some(request: reviews.Request, *, webhook: str | None = None, **_: Any) -> reviews.Response:
        obj: Any = request["request"].get("object") or {}
        allowed = obj.get("data", {}).get("ok") == "yes"
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": request["request"]["uid"],
                "allowed": allowed,
                "status": {"code": 400, "message": f"{webhook} says no"},
            },
        }

    config, _ = await serve(WebhookServer(addr="127.0.0.1", port=0, path="/hooks"), deny_some)
    client_config = dict(config, url=f"{config.get('url')}/check-data")
    hooks = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "auto.kopf.dev"},
        "webhooks": [
            {
                "name": "check-data.auto.kopf.dev",
                "clientConfig": client_config,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "rules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
                ],
            }
        ],
    }
    base = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    async with InMemoryServer(build_app(Cluster())) as apiserver, apiserver.session() as session:
        async with session.post(base, json=hooks) as response:
            assert response.status == 201
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {"ok": "no"}}
        async with session.post("/api/v1/namespaces/default/configmaps", json=cm) as response:
            assert response.status == 400
            assert "check-data says no" in (await response.json())["message"]
        cm["data"] = {"ok": "yes"}
        async with session.post("/api/v1/namespaces/default/configmaps", json=cm) as response:
            assert response.status == 201
