"""The ``kopf_cluster`` fixture's object: the test's client of the Kubernetes API, the same in both modes.

It implements :class:`pytest_kopf.client.Client` (read, write, wait, events, apply, replay) once, over one
exchange of bytes per mode. In real mode (:mod:`pytest_kopf._realcluster`), that exchange is HTTP to the
cluster of the kubeconfig context, with kopf's own login and TLS. In sim mode (:class:`SimKopfCluster`),
the requests (the same methods, paths, query parameters and JSON bodies) go straight into a fresh simulated
apiserver's request handling (:mod:`kopf_sim.transports.direct`), which answers with the same status codes and bytes
as over HTTP, at a fraction of the cost; the operator under test talks to that apiserver over HTTP (the
in-memory transport). What only the simulator can do is on ``kopf_cluster.sim``
(:class:`pytest_kopf.simcontrols.SimControls`), which raises :class:`~pytest_kopf.errors.KopfModeError`
in real mode.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import json
import os
import pathlib
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Unpack

import aiohttp
import yaml

from kopf_sim.manifests import parse_manifests, read_manifest
from kopf_sim.rbac.users import ADMIN, user_named
from kopf_sim.recording.apiclient import Served
from kopf_sim.recording.replaying import KOPF_BOOKKEEPING, Bookkeeping, Replay, WatchLog
from kopf_sim.recording.replaying import prepare as prepare_replay
from kopf_sim.transports.direct import DirectClient
from kopf_sim.transports.inmemory import DEFAULT_BASE_URL

from ._discovery import Discovery, ResourceInfo
from ._replays import exchange_api
from .client import Client, Condition, JsonDict, JsonList, Manifests
from .errors import KopfApiError, KopfModeError, KopfResourceError, KopfTimeoutError
from .simcontrols import SimControls, SimOptions

__all__ = [
    "DEFAULT_TIMEOUT",
    "Connection",
    "KopfCluster",
    "Manifests",
    "ResourceInfo",
    "SimKopfCluster",
]


DEFAULT_TIMEOUT = 60.0
USER_AGENT = "pytest-kopf"
CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io"
_JSON = "application/json"
_MERGE_PATCH = "application/merge-patch+json"
_REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=DEFAULT_TIMEOUT)  # single requests; watches have no limit


@dataclasses.dataclass(frozen=True)
class Connection:
    """How a client in this process (e.g. an operator under test) reaches the cluster.

    In sim mode, the connector is an in-memory one (no sockets, virtual time friendly);
    in real mode, a TCP connector with the kubeconfig's TLS settings.
    """

    base_url: str
    headers: Mapping[str, str]
    ssl: ssl.SSLContext | None
    namespace: str
    connector_factory: Callable[[], aiohttp.BaseConnector]

    def connector(self) -> aiohttp.BaseConnector:
        return self.connector_factory()

    def session(self, **kwargs: Any) -> aiohttp.ClientSession:
        """A new client session to the cluster (the caller closes it)."""
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return aiohttp.ClientSession(connector=self.connector(), headers=headers, **kwargs)


@dataclasses.dataclass
class _Watching:
    """The progress of one ``wait_for``: the last state seen, and the last error of the condition."""

    condition: Condition
    last: JsonDict | None = None
    seen: bool = False
    error: Exception | None = None

    def check(self, obj: JsonDict | None) -> bool:
        self.last, self.seen = obj, True
        try:
            return bool(self.condition(obj))
        except (LookupError, AttributeError, TypeError) as exc:  # e.g. a field not there yet, or None
            self.error = exc
            return False


def _exists(obj: JsonDict | None) -> bool:
    return obj is not None


def _gone(obj: JsonDict | None) -> bool:
    return obj is None


class KopfCluster(Client, abc.ABC):
    """The cluster of a test: apply manifests, create/get/list/patch/delete, wait for conditions, replay logs.

    Resources are named as kubectl names them: plural (``pods``), ``plural.group``
    (``kopfexamples.kopf.dev``), singular, short name, or kind; they are resolved through
    the cluster's discovery. Namespaced objects given without a namespace go to
    :attr:`namespace` (``default`` in sim mode, the test's own namespace in real mode).
    API errors raise :class:`~pytest_kopf.errors.KopfApiError` with the apiserver's code,
    reason and message. What only a simulated cluster can do is on :attr:`sim`.
    """

    mode: str = ""

    def __init__(self, *, base_url: str, namespace: str, tmp_dir: Callable[[], pathlib.Path]) -> None:
        self.base_url = base_url.rstrip("/")
        #: The namespace of the objects created without one: ``default`` in sim mode, the test's own in real mode.
        self.namespace = namespace
        self._tmp_dir = tmp_dir
        self._session: aiohttp.ClientSession | None = None
        self._discovery = Discovery(self._discover)

    # -- the lifecycle (the plugin calls these in the test's loop) ---------------------------------

    @abc.abstractmethod
    async def setup(self) -> None:
        """Prepare the cluster for a test (a fresh simulated one, or a namespace in a real one)."""

    async def teardown(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    @abc.abstractmethod
    def connection(self) -> Connection:
        """How an in-process client (e.g. the operator under test) connects to this cluster."""

    @property
    def sim(self) -> SimControls:
        """The simulator's controls (store, faults, virtual time, admission, controllers); sim mode only."""
        raise KopfModeError(
            "kopf_cluster.sim (the simulator's store, faults, virtual time, admission and "
            "controllers) is available only in sim mode (--kopf-sim); this test runs against "
            "a real cluster (--kopf-real): mark it @pytest.mark.kopf_sim_only."
        )

    def rbac(self, *, enforce: bool = True, as_: str | None = None) -> None:
        """Enforce RBAC for the operator's requests, acting as ``as_``: sim mode only (see the subclass)."""
        raise KopfModeError(
            "kopf_cluster.rbac() is for the simulated cluster (--kopf-sim): a real cluster enforces its own RBAC, "
            "for the operator's own credentials; mark the test @pytest.mark.kopf_sim_only."
        )

    @abc.abstractmethod
    async def kubeconfig(self) -> pathlib.Path:
        """The path of a kubeconfig for other processes (kubectl, ``kopf run``): see the subclasses."""

    # -- record & replay (see docs/replay.md) ---------------------------------------------------------

    async def prepare_replay(
        self,
        log: str | os.PathLike[str] | WatchLog,
        *,
        until: float | None = None,
        resources: Iterable[str] | None = None,
        namespace: str | None = None,
        bookkeeping: Bookkeeping = KOPF_BOOKKEEPING,
    ) -> Replay:
        """Read a watch-event log, check it against this cluster, and plan its changes; nothing is written yet.

        Apply them one by one (``for step in replay: await replay.apply(step)``) or all in time
        (``await replay.run(speed=...)``). ``namespace``: where namespaced objects go (in real mode, the
        test's namespace by default). See :meth:`replay` for the rest.
        """
        names = None if resources is None else [await self._replay_name(name) for name in resources]
        if namespace is None and self.mode == "real":
            namespace = self.namespace
        return await prepare_replay(
            log,
            exchange_api(self._exchange),
            resources=names,
            until=until,
            namespace=namespace,
            bookkeeping=bookkeeping,
            on_create=self._replayed,
        )

    async def replay(
        self,
        log: str | os.PathLike[str] | WatchLog,
        *,
        speed: float | None = 1.0,
        until: float | None = None,
        resources: Iterable[str] | None = None,
        quiet: float = 1.0,
        namespace: str | None = None,
        bookkeeping: Bookkeeping = KOPF_BOOKKEEPING,
    ) -> Replay:
        """Write the changes of a watch-event log into the cluster, at their relative times; return when done.

        ``speed``: 1.0 is the recorded pace (in virtual time under ``--kopf-sim``), 10.0 is ten times
        faster; ``None``: each change once the cluster has had no writes for ``quiet`` seconds (the
        operator is done with the previous one). ``until``: only the events up to so many seconds into
        the log. ``resources``: only these (names as kubectl takes them; by default all but events).
        ``bookkeeping``: what the recorded operator wrote for itself, not replayed (Kopf's by default).
        A bad log raises :class:`kopf_sim.recording.replaying.LogError` before anything is written; a refused
        write raises :class:`kopf_sim.recording.replaying.ReplayError` naming its line.
        """
        planned = await self.prepare_replay(
            log, until=until, resources=resources, namespace=namespace, bookkeeping=bookkeeping
        )
        try:
            await planned.run(speed=speed, quiet=quiet)
        finally:
            self.forget_discovery()  # the log may have brought CRDs
        return planned

    async def _replay_name(self, name: str) -> str:
        """A resource's name as the log has it (``plural.group``) if the cluster knows it (e.g. a short name)."""
        try:
            return (await self.resolve(name)).qualified
        except KopfResourceError:
            return name  # maybe a resource that a CRD in the log defines

    def _replayed(self, served: Served, obj: JsonDict) -> None:
        """What a replay creates is cleaned up as what the test creates (in real mode: cluster-scoped objects)."""
        info = ResourceInfo(
            group=served.group,
            version=served.version,
            plural=served.plural,
            kind=served.kind,
            namespaced=served.namespaced,
        )
        self._created(info, obj)

    # -- HTTP ---------------------------------------------------------------------------------------

    @property
    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("kopf_cluster is not set up (or already torn down).")
        return self._session

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = _JSON,
        headers: Mapping[str, str] | None = None,
        raw: bool = False,
    ) -> Any:
        headers = {**(headers or {}), **({"Content-Type": content_type} if body is not None else {})}
        data = json.dumps(body).encode() if body is not None else None
        status, reason, content = await self._exchange(method, path, params, data, headers)
        if status >= 400:
            raise _api_error(method, self._url(path, params), status, reason, content)
        if raw:
            return content
        return json.loads(content) if content.strip() else None

    async def _exchange(
        self, method: str, path: str, params: Mapping[str, str] | None, data: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, str, bytes]:
        """One request over HTTP: the response's status code, reason phrase and body."""
        async with self._http.request(
            method, self.base_url + path, params=params, data=data, headers=headers, timeout=_REQUEST_TIMEOUT
        ) as response:
            return response.status, response.reason or "", await response.read()

    async def _stream(self, path: str, params: Mapping[str, str]) -> AsyncIterator[JsonDict]:
        """The events of one watch request, until the server ends the stream."""
        buffer = b""
        async for chunk in self._watch_chunks(path, {**params, "watch": "true"}):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)

    async def _watch_chunks(self, path: str, params: Mapping[str, str]) -> AsyncIterator[bytes]:
        """The bytes of one watch response over HTTP as they come; API errors raised, a broken stream ended."""
        async with self._http.get(self.base_url + path, params=params) as response:
            if response.status >= 400:
                raw = await response.read()
                raise _api_error("GET", str(response.url), response.status, response.reason or "", raw)
            try:
                async for chunk in response.content.iter_any():
                    yield chunk
            except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionResetError):
                return  # a broken stream ends like a closed one: the caller lists again

    def _url(self, path: str, params: Mapping[str, str] | None) -> str:
        """The URL of a request, as error messages show it."""
        return self.base_url + path + (f"?{urllib.parse.urlencode(params)}" if params else "")

    # -- discovery ------------------------------------------------------------------------------------

    def forget_discovery(self) -> None:
        """Drop the cached discovery (done automatically after CRDs are applied or deleted)."""
        self._discovery.forget()

    async def _discover(self, path: str, headers: Mapping[str, str]) -> bytes | None:
        try:
            body: bytes = await self._request("GET", path, headers=headers, raw=True)
        except KopfApiError as exc:
            if exc.code in (404, 503):
                return None
            raise
        return body

    async def resolve(self, resource: str | ResourceInfo) -> ResourceInfo:
        """The served resource for a plural, ``plural.group``, singular, short name, or kind."""
        if isinstance(resource, ResourceInfo):
            return resource
        for attempt in range(2):
            if attempt:
                self.forget_discovery()
            found = await self._find(resource)
            if found is not None:
                return found
        raise KopfResourceError(f'The server does not have a resource type "{resource}".')

    async def _find(self, resource: str) -> ResourceInfo | None:
        versions = await self._discovery.preferred_versions()
        name, dot, group = resource.partition(".")
        preferred = await self._discovery.preferred_of(group) if dot else None
        if preferred is not None:
            for info in await self._discovery.group_version(preferred) or ():
                if name.lower() in info.names() or name == info.kind:
                    return info
        for group_version in versions:
            for info in await self._discovery.group_version(group_version) or ():
                if resource.lower() in info.names() or resource == info.kind:
                    return info
        return None

    async def resolve_kind(self, api_version: str, kind: str) -> ResourceInfo:
        """The served resource of a manifest's ``apiVersion`` and ``kind``."""
        for attempt in range(2):
            if attempt:
                self.forget_discovery()
            for info in await self._discovery.group_version(api_version) or ():
                if info.kind == kind:
                    return info
        raise KopfResourceError(f'No matches for kind "{kind}" in version "{api_version}".')

    def _namespace(self, info: ResourceInfo, namespace: str | None) -> str | None:
        if not info.namespaced:
            return None
        return namespace if namespace is not None else self.namespace

    # -- objects --------------------------------------------------------------------------------------

    async def apply(self, manifests: Manifests) -> list[JsonDict]:
        """Create the objects, or merge-patch those that exist (as ``kubectl apply``); CRDs get served.

        ``manifests``: a file path, YAML text (several documents allowed), an object, or a list
        of objects; ``kind: List`` documents are unfolded. Returns the resulting objects.
        """
        results: list[JsonDict] = []
        for doc in _documents(manifests):
            info = await self.resolve_kind(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))
            metadata = doc.get("metadata") or {}
            namespace = self._namespace(info, metadata.get("namespace"))
            name = metadata.get("name")
            existing = await self.get(info, name, namespace) if name else None
            if existing is None or not name:
                results.append(await self._create(info, namespace, doc))
            else:
                results.append(await self._patch(info, name, namespace, doc, None))
                if is_crd(info):
                    await self._await_crd(results[-1])
        return results

    async def create(self, body: Mapping[str, Any]) -> JsonDict:
        """Create an object; namespaced ones without a namespace go to :attr:`namespace`."""
        info = await self.resolve_kind(str(body.get("apiVersion", "")), str(body.get("kind", "")))
        return await self._create(info, self._namespace(info, (body.get("metadata") or {}).get("namespace")), body)

    async def _create(self, info: ResourceInfo, namespace: str | None, body: Mapping[str, Any]) -> JsonDict:
        body = dict(body)
        if namespace is not None:
            body["metadata"] = {**(body.get("metadata") or {}), "namespace": namespace}
        obj: JsonDict = await self._request("POST", info.path(namespace), body=body)
        self._created(info, obj)
        if is_crd(info):
            await self._await_crd(obj)
        return obj

    def _created(self, info: ResourceInfo, obj: JsonDict) -> None:
        """A hook for the real cluster: remember what to remove at teardown."""

    async def _await_crd(self, crd: JsonDict) -> None:
        """Wait until a CRD is established and its resource is served in discovery."""

        def established(obj: JsonDict | None) -> bool:
            conditions = ((obj or {}).get("status") or {}).get("conditions") or ()
            return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

        if not established(crd):
            await self.wait_for(CRD_RESOURCE, crd["metadata"]["name"], condition=established, timeout=DEFAULT_TIMEOUT)
        spec = crd.get("spec") or {}
        plural = (spec.get("names") or {}).get("plural")
        versions = [v.get("name") for v in spec.get("versions") or () if v.get("served", True)]
        async with asyncio.timeout(DEFAULT_TIMEOUT):
            while True:
                self._discovery.forget(str(spec.get("group") or ""))
                served = [await self._discovery.group_version(f"{spec.get('group')}/{version}") for version in versions]
                if all(found and any(info.plural == plural for info in found) for found in served):
                    return
                await asyncio.sleep(0.1)

    async def get(self, resource: str | ResourceInfo, name: str, namespace: str | None = None) -> JsonDict | None:
        """The object, or None if it does not exist."""
        info = await self.resolve(resource)
        try:
            obj: JsonDict = await self._request("GET", info.path(self._namespace(info, namespace), name))
        except KopfApiError as exc:
            if exc.code == 404 and exc.reason == "NotFound" and exc.details.get("name") == name:
                return None
            raise
        return obj

    async def list(
        self,
        resource: str | ResourceInfo,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | str | None = None,
        all_namespaces: bool = False,
    ) -> list[JsonDict]:
        """The objects of a resource in a namespace (or in all), optionally selected by labels."""
        info = await self.resolve(resource)
        params: dict[str, str] = {}
        if labels:
            params["labelSelector"] = (
                labels if isinstance(labels, str) else ",".join(f"{key}={value}" for key, value in labels.items())
            )
        target = None if all_namespaces else self._namespace(info, namespace)
        listing = await self._request("GET", info.path(target), params=params)
        return _items(listing)

    async def patch(
        self,
        resource: str | ResourceInfo,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JsonDict:
        """Merge-patch an object (or its ``status`` or ``scale`` subresource); returns the result."""
        info = await self.resolve(resource)
        return await self._patch(info, name, self._namespace(info, namespace), patch, subresource)

    async def _patch(
        self, info: ResourceInfo, name: str, namespace: str | None, patch: Mapping[str, Any], subresource: str | None
    ) -> JsonDict:
        obj: JsonDict = await self._request(
            "PATCH", info.path(namespace, name, subresource), body=dict(patch), content_type=_MERGE_PATCH
        )
        return obj

    async def delete(
        self,
        resource: str | ResourceInfo,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
    ) -> JsonDict:
        """Request the deletion (finalizers may hold the object; see :meth:`wait_gone`)."""
        info = await self.resolve(resource)
        body = {"propagationPolicy": propagation_policy} if propagation_policy else None
        result: JsonDict = await self._request("DELETE", info.path(self._namespace(info, namespace), name), body=body)
        if is_crd(info):
            self._discovery.forget(str(((result or {}).get("spec") or {}).get("group") or ""))  # all if unknown
        return result

    async def wait_for(
        self,
        resource: str | ResourceInfo,
        name: str,
        namespace: str | None = None,
        *,
        condition: Condition | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> JsonDict | None:
        """Wait until the condition holds for the object (given None while it is absent); return it.

        Without a condition, wait until the object exists. Lookup errors in the condition
        (``KeyError``, ``AttributeError``, ``TypeError``: a field not there yet) count as "not yet".
        On timeout, :class:`~pytest_kopf.errors.KopfTimeoutError` shows the last state seen.
        """
        info = await self.resolve(resource)
        target = self._namespace(info, namespace)
        watching = _Watching(condition or _exists)
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                return await self._watch_until(info, target, name, watching)
        except TimeoutError:
            if not deadline.expired():
                raise  # not ours, e.g. a client's timeout
            raise _timeout_error(info, name, target, condition or _exists, timeout, watching) from None

    async def wait_gone(
        self, resource: str | ResourceInfo, name: str, namespace: str | None = None, *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Wait until the object does not exist (e.g. after its finalizers are removed)."""
        await self.wait_for(resource, name, namespace, condition=_gone, timeout=timeout)

    async def _watch_until(
        self, info: ResourceInfo, namespace: str | None, name: str, watching: _Watching
    ) -> JsonDict | None:
        selector = {"fieldSelector": f"metadata.name={name}"}
        path = info.path(namespace)
        while True:
            listing = await self._request("GET", path, params=selector)
            items = _items(listing)
            obj = items[0] if items else None
            if watching.check(obj):
                return obj
            version = str((listing.get("metadata") or {}).get("resourceVersion", ""))
            params = {**selector, "resourceVersion": version, "allowWatchBookmarks": "true"}
            events = 0
            async for event in self._stream(path, params):
                events += 1
                kind = event.get("type")
                if kind == "ERROR":
                    break  # e.g. 410 Expired: list again
                if kind in ("ADDED", "MODIFIED"):
                    obj = event.get("object")
                elif kind == "DELETED":
                    obj = None
                else:
                    continue
                if watching.check(obj):
                    return obj
            if not events:
                await asyncio.sleep(0.1)  # a stream closed at once: do not hammer the server

    async def events(self, resource: str | ResourceInfo, name: str, namespace: str | None = None) -> JsonList:
        """The ``kind: Event`` objects (core/v1) about an object, in the server's order."""
        info = await self.resolve(resource)
        target = self._namespace(info, namespace)
        path = f"/api/v1/namespaces/{target}/events" if target else "/api/v1/events"
        listing = await self._request("GET", path, params={"fieldSelector": f"involvedObject.name={name}"})
        return [
            event
            for event in _items(listing)
            if (event.get("involvedObject") or {}).get("kind") in (info.kind, None)
            and _same_group((event.get("involvedObject") or {}).get("apiVersion"), info.group)
        ]


class SimKopfCluster(KopfCluster):
    """A fresh simulated cluster (``kopf_sim``) behind the in-memory transport; its controls are :attr:`sim`."""

    mode = "sim"

    def __init__(
        self, *, loop: asyncio.AbstractEventLoop, tmp_dir: Callable[[], pathlib.Path], **options: Unpack[SimOptions]
    ) -> None:
        super().__init__(base_url=DEFAULT_BASE_URL, namespace="default", tmp_dir=tmp_dir)
        self._sim = SimControls(loop=loop, tmp_dir=tmp_dir, **options)
        self._direct: DirectClient | None = None

    @property
    def sim(self) -> SimControls:
        return self._sim

    def rbac(self, *, enforce: bool = True, as_: str | None = None) -> None:
        """Enforce RBAC for the operator's requests (not the test's own): they act as ``as_``.

        With ``as_`` (e.g. ``"system:serviceaccount:default:kopfexample-account"``), the operator's requests
        are that user's, and those that the RBAC objects of the test's cluster do not allow are 403 Forbidden,
        as on a real cluster. Without it, the operator stays a cluster-admin. ``enforce=False`` turns it off.
        """
        self._sim.access.enforce = enforce
        user = user_named(as_) if as_ else ADMIN
        for token in self._sim.operator_tokens:
            self._sim.access.set_token_user(token, user)

    async def setup(self) -> None:
        await self._sim.start()
        self._direct = DirectClient(self._sim.app, headers={"User-Agent": USER_AGENT})

    async def teardown(self) -> None:
        try:
            self._direct = None
            await super().teardown()
        finally:
            await self._sim.stop()

    @property
    def connection(self) -> Connection:
        return Connection(
            base_url=DEFAULT_BASE_URL,
            headers={},
            ssl=None,
            namespace=self.namespace,
            connector_factory=self._sim.server.connector,
        )

    # The test's own requests go straight into the simulator's logic (the same answers, without the HTTP
    # framing and with no faults injected); the operator's go over HTTP (see :attr:`connection`).

    @property
    def _client(self) -> DirectClient:
        if self._direct is None:
            raise RuntimeError("kopf_cluster is not set up (or already torn down).")
        return self._direct

    async def _exchange(
        self, method: str, path: str, params: Mapping[str, str] | None, data: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, str, bytes]:
        async with asyncio.timeout(DEFAULT_TIMEOUT):
            response = await self._client.request(method, path, params=params, body=data, headers=headers)
        await response.close()  # only a watch (not asked for here) would need it
        return response.status, response.reason, response.body

    async def _watch_chunks(self, path: str, params: Mapping[str, str]) -> AsyncIterator[bytes]:
        response = await self._client.request("GET", path, params=params)
        if response.status >= 400:
            raise _api_error("GET", self._url(path, params), response.status, response.reason, response.body)
        async for chunk in response.chunks():
            yield chunk

    async def kubeconfig(self) -> pathlib.Path:
        """The simulated cluster served on 127.0.0.1 (HTTPS, a token) for other processes; its kubeconfig.

        Other processes run in real time, so this needs a test marked ``kopf_real_time``.
        """
        return await self._sim.serve()


# -- helpers ---------------------------------------------------------------------------------------


def is_crd(info: ResourceInfo) -> bool:
    """Whether the resource is the CustomResourceDefinitions (they need waiting for, and cleaning up)."""
    return info.kind == "CustomResourceDefinition" and info.group == "apiextensions.k8s.io"


def _api_error(method: str, url: str, code: int, http_reason: str, raw: bytes) -> KopfApiError:
    try:
        status = json.loads(raw)
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        return KopfApiError(
            int(status.get("code") or code),
            str(status.get("reason") or http_reason),
            str(status.get("message") or ""),
            status=status,
            method=method,
            url=url,
        )
    text = raw.decode("utf-8", "replace").strip()
    return KopfApiError(code, http_reason, text, method=method, url=url)


def _items(listing: Mapping[str, Any]) -> list[JsonDict]:
    """A list's items, with the ``apiVersion`` and ``kind`` that lists omit from them."""
    api_version = listing.get("apiVersion", "")
    kind = str(listing.get("kind", "")).removesuffix("List")
    return [{"apiVersion": api_version, "kind": kind, **item} for item in listing.get("items") or ()]


def _same_group(api_version: Any, group: str) -> bool:
    if not isinstance(api_version, str) or not api_version:
        return True
    return (api_version.rpartition("/")[0] if "/" in api_version else "") == group


_parsed_files: dict[tuple[str, int, int], list[Any]] = {}


def _read_manifest(path: str | os.PathLike[str]) -> list[Any]:
    """The documents of a manifest file, parsed once per version of the file (a test suite applies the same CRDs
    in every test; parsing a CRD's YAML costs more than applying it to the simulator)."""
    try:
        stat = os.stat(path)
    except OSError:
        return read_manifest(pathlib.Path(path))  # the error as the reader words it
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _parsed_files:
        _parsed_files[key] = read_manifest(pathlib.Path(path))
    return list(_parsed_files[key])  # the documents are only read (sent as they are): shared, never copied


def _documents(manifests: Manifests) -> list[Mapping[str, Any]]:
    if isinstance(manifests, Mapping):
        docs: Iterable[Any] = [manifests]
    elif isinstance(manifests, os.PathLike):
        docs = _read_manifest(manifests)
    elif isinstance(manifests, str):
        if "\n" not in manifests and not manifests.lstrip().startswith("{"):
            docs = _read_manifest(manifests)
        else:
            docs = parse_manifests(manifests)
    else:
        docs = list(manifests)
    result: list[Mapping[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, Mapping):
            raise TypeError(f"A manifest must be a mapping, got {type(doc).__name__}.")
        if str(doc.get("kind", "")).endswith("List") and "items" in doc:
            result.extend(_documents(list(doc["items"] or ())))
        else:
            result.append(doc)
    return result


def _timeout_error(
    info: ResourceInfo, name: str, namespace: str | None, condition: Condition, timeout: float, watching: _Watching
) -> KopfTimeoutError:
    where = f" in namespace {namespace!r}" if namespace else ""
    what = (
        "to be gone"
        if condition is _gone
        else "to exist"
        if condition is _exists
        else f"for the condition {getattr(condition, '__qualname__', None) or condition!r}"
    )
    lines = [f"Timed out after {timeout} s waiting for {info.qualified} {name!r}{where} {what}."]
    if not watching.seen:
        lines.append("The object was never seen.")
    elif watching.last is None:
        lines.append("Last seen state: absent.")
    else:
        lines.append("Last seen state:\n" + yaml.safe_dump(watching.last, sort_keys=False).rstrip())
    if watching.error is not None:
        lines.append(f"The condition last failed with {type(watching.error).__name__}: {watching.error}")
    return KopfTimeoutError("\n".join(lines), last=watching.last, seen=watching.seen)
