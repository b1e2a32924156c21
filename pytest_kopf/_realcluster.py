"""``kopf_cluster`` in real mode: the cluster of a kubeconfig context, a namespace of the test's own.

The credentials are kopf's (:func:`pytest_kopf._kubeconfig.load`: kopf's kubeconfig login, exec plugins
included), and so are the test client's session, headers and TLS (:func:`kopf._kits.testing.make_api_session`):
the test reaches the cluster exactly as the operator under test does. The set-up creates the test's
namespace; the teardown removes what the test has made (:mod:`pytest_kopf._cleanup`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from collections.abc import Callable
from typing import Any

import aiohttp

from kopf import ConnectionInfo
from kopf._kits.testing import make_api_session

from . import _kubeconfig as kubeconfig
from ._cleanup import remove_leftovers
from ._discovery import ResourceInfo
from ._replays import RealModeRecorder
from .client import JsonDict
from .cluster import USER_AGENT, Connection, KopfCluster, is_crd
from .errors import KopfApiError, KopfClusterUnreachable, KopfConfigError

__all__ = ["RealKopfCluster"]

#: How long the set-up waits for the cluster's first answer.
CONNECT_TIMEOUT = 30.0

_NAMESPACES = ResourceInfo(group="", version="v1", plural="namespaces", kind="Namespace", namespaced=False)


class RealKopfCluster(KopfCluster):
    """The cluster of a kubeconfig context; the test gets its own namespace, removed afterwards."""

    mode = "real"

    def __init__(
        self,
        *,
        login: kubeconfig.KubeconfigLogin,
        namespace: str,
        tmp_dir: Callable[[], pathlib.Path],
        record_path: pathlib.Path | None = None,
    ) -> None:
        super().__init__(base_url=login.info.server, namespace=namespace, tmp_dir=tmp_dir)
        #: The kubeconfig context as kopf's login has read it (the context's name, its files, the credentials).
        self.login = login
        self._ssl = login.info.as_ssl_context() if self.base_url.lower().startswith("https:") else None
        self._recorder = (
            None
            if record_path is None
            else RealModeRecorder(
                record_path,
                server=self.base_url,
                ssl_context=self._ssl,
                headers=login.info.as_http_headers,
                namespace=namespace,
            )
        )
        self._cleanup: list[tuple[ResourceInfo, str]] = []
        self._namespace_created = False
        self._kubeconfig: pathlib.Path | None = None

    @property
    def credentials(self) -> ConnectionInfo:
        """The context's credentials, with the test's namespace as the default one (for the operator under test)."""
        return dataclasses.replace(self.login.info, default_namespace=self.namespace)

    def relogin(self) -> ConnectionInfo:
        """The context's credentials read anew (an exec plugin runs again: e.g. after its token has expired)."""
        self.login = kubeconfig.load(self.login.paths, context=self.login.context)
        return self.credentials

    def _connector(self) -> aiohttp.BaseConnector:
        return aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True)

    @property
    def connection(self) -> Connection:
        return Connection(
            base_url=self.base_url,
            headers=self.login.info.as_http_headers(),
            ssl=self._ssl,
            namespace=self.namespace,
            connector_factory=self._connector,
        )

    async def setup(self) -> None:
        self._session = make_api_session(self.login.info, user_agent=USER_AGENT)
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                await self._request("GET", "/version")
        except (aiohttp.ClientConnectionError, OSError, TimeoutError) as exc:
            await self.teardown()
            reason = str(exc) or type(exc).__name__
            raise KopfClusterUnreachable(
                f"The Kubernetes API at {self.base_url} (kubeconfig context {self.login.context!r}) "
                f"is unreachable: {reason}"
            ) from None
        except KopfApiError as exc:
            await self.teardown()
            if exc.code not in (401, 403):
                raise
            raise KopfConfigError(
                f"The Kubernetes API at {self.base_url} refuses the credentials of the kubeconfig context "
                f"{self.login.context!r} ({', '.join(self.login.paths)}): {exc.code} {exc.reason}"
            ) from None
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.namespace, "labels": {"app.kubernetes.io/managed-by": USER_AGENT}},
        }
        try:
            await self._request("POST", "/api/v1/namespaces", body=namespace)
        except BaseException:
            await self.teardown()
            raise
        self._namespace_created = True
        if self._recorder is not None:
            await self._recorder.start()

    def _created(self, info: ResourceInfo, obj: JsonDict) -> None:
        if not info.namespaced:
            self._cleanup.append((info, obj["metadata"]["name"]))

    async def teardown(self) -> None:
        """Remove the test's objects, namespace and CRDs, and wait until they are gone (see :mod:`.cleanup`)."""
        try:
            if self._recorder is not None:
                await self._recorder.stop()
            if self._session is not None:
                await remove_leftovers(self)
        finally:
            self._cleanup.clear()
            self._namespace_created = False
            await super().teardown()

    def created_crds(self) -> list[str]:
        """The names of the CRDs that the test has created (their objects are the test's, in any namespace)."""
        return [name for info, name in self._cleanup if is_crd(info)]

    def namespace_path(self) -> str:
        return _NAMESPACES.path(None, self.namespace)

    async def api_request(
        self, method: str, path: str, *, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        """A request to an API path (JSON in, JSON out), for the teardown's clean-up (:mod:`pytest_kopf._cleanup`)."""
        return await self._request(method, path, body=body, content_type=content_type)

    def victims(self) -> list[str]:
        """The paths of what the test has made and the teardown deletes: its namespace, its cluster-wide objects."""
        paths = [self.namespace_path()] if self._namespace_created else []
        return paths + [info.path(None, name) for info, name in reversed(self._cleanup)]

    async def namespaced_resources(self) -> list[ResourceInfo]:
        """The namespaced resources served now (for the objects left in a namespace)."""
        self.forget_discovery()
        found: list[ResourceInfo] = []
        for group_version in await self._discovery.preferred_versions():
            found.extend(info for info in await self._discovery.group_version(group_version) or () if info.namespaced)
        return found

    async def kubeconfig(self) -> pathlib.Path:
        """A kubeconfig of this context, with the test's namespace as the default one."""
        if self._kubeconfig is None:
            path = self._tmp_dir() / "kubeconfig"
            kubeconfig.write(path, self.login, namespace=self.namespace)
            self._kubeconfig = path
        return self._kubeconfig
