"""Every namespace's defaults: the ``default`` ServiceAccount and the ``kube-root-ca.crt`` ConfigMap.

In a real cluster, the service-account controller and the root-CA publisher of kube-controller-manager
create them as soon as a namespace appears, and re-create them when they are deleted.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.store.watching import Change

from .runtime import NAMESPACES, Controller, Key, create_bootstrap

SERVICE_ACCOUNTS = ("", "serviceaccounts")
CONFIGMAPS = ("", "configmaps")
ROOT_CA = "kube-root-ca.crt"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


class NamespaceController(Controller):
    name = "namespaces"
    primary = NAMESPACES
    watches = (SERVICE_ACCOUNTS, CONFIGMAPS)

    def bootstrap(self) -> None:
        """The namespaces that exist at start get their defaults at once (as in a cluster that is up)."""
        for namespace in list(self.cluster.objects(NAMESPACES)):
            for body in self._missing(namespace):
                key = SERVICE_ACCOUNTS if body["kind"] == "ServiceAccount" else CONFIGMAPS
                identity = self.manager.settings.root_ca if key == CONFIGMAPS else ""
                create_bootstrap(
                    self.cluster,
                    self.rtype(key),
                    meta(namespace)["name"],
                    identity,
                    functools.partial(dict, body),
                    manager=self.field_manager,
                )

    def initial_keys(self) -> list[Key]:
        return []  # the bootstrap did them all

    def related_keys(self, change: Change) -> Iterable[Key]:
        metadata = meta(change.obj)
        wanted = "default" if change.key == SERVICE_ACCOUNTS else ROOT_CA
        if change.type == "DELETED" and metadata.get("name") == wanted:
            return (("", metadata.get("namespace", "")),)
        if change.type == "MODIFIED" and change.key == CONFIGMAPS and metadata.get("name") == ROOT_CA:
            return (("", metadata.get("namespace", "")),)
        return ()

    async def reconcile(self, key: Key) -> None:
        namespace = self.get(NAMESPACES, key)
        if namespace is None:
            return
        for body in self._missing(namespace):
            key_ = SERVICE_ACCOUNTS if body["kind"] == "ServiceAccount" else CONFIGMAPS
            await self.create(key_, meta(namespace)["name"], body)
        configmap = self.cluster.peek(CONFIGMAPS, meta(namespace)["name"], ROOT_CA)
        if configmap is not None and configmap.get("data") != {"ca.crt": self.manager.settings.root_ca}:
            await self.update({**configmap, "data": {"ca.crt": self.manager.settings.root_ca}})

    def _missing(self, namespace: JsonDict) -> list[JsonDict]:
        if meta(namespace).get("deletionTimestamp"):
            return []
        name = meta(namespace)["name"]
        bodies: list[JsonDict] = []
        if self.cluster.peek(SERVICE_ACCOUNTS, name, "default") is None:
            bodies.append(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}}
            )
        if self.cluster.peek(CONFIGMAPS, name, ROOT_CA) is None:
            bodies.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": ROOT_CA,
                        "namespace": name,
                        "annotations": {"kubernetes.io/description": DESCRIPTION},
                    },
                    "data": {"ca.crt": self.manager.settings.root_ca},
                }
            )
        return bodies
