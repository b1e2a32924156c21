"""A small client of any Kubernetes API for the recorder and the replayer: requests, watches, discovery.

The same :data:`Api` call shape (method, path, query, JSON body; the status code and the parsed
answer back) reaches a simulated apiserver in this process (:func:`app_api`, no HTTP framing) or
any cluster over HTTP(S) (:class:`HttpApi`, which also streams watches). :class:`Discovery` reads
the legacy discovery lists (``/api/v1``, ``/apis``, ``/apis/G/V``), which every apiserver serves.
"""

from __future__ import annotations

import dataclasses
import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from kopf_sim.kube.objects import JsonDict
from kopf_sim.transports.direct import DirectClient

__all__ = ["JSON", "MERGE_PATCH", "Api", "ApiFailure", "Discovery", "HttpApi", "Served", "app_api", "resource_path"]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


class Api(Protocol):
    """One request to an apiserver: the status code and the parsed JSON answer (None if empty)."""

    async def __call__(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> tuple[int, Any]: ...


class ApiFailure(Exception):
    """A request failed: the code, and the apiserver's own words from its ``Status``."""

    def __init__(self, method: str, path: str, code: int, answer: Any) -> None:
        status = answer if isinstance(answer, dict) else {}
        self.code = code
        self.reason = str(status.get("reason") or "")
        self.message = str(status.get("message") or answer or "")
        super().__init__(f"{method} {path}: {code} {self.reason}: {self.message}".replace(": :", ":"))


async def request(
    api: Api,
    method: str,
    path: str,
    *,
    params: Mapping[str, str] | None = None,
    body: Any = None,
    content_type: str = JSON,
) -> Any:
    """The answer of a successful request; :class:`ApiFailure` for any other."""
    code, answer = await api(method, path, params=params, body=body, content_type=content_type)
    if code >= 400:
        raise ApiFailure(method, path, code, answer)
    return answer


def app_api(app: web.Application, *, user_agent: str = "kopf-sim") -> Api:
    """Requests straight into a simulated apiserver's app in this process (admission included)."""
    client = DirectClient(app, headers={"User-Agent": user_agent})

    async def call(
        method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None, content_type: str = JSON
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if body is not None else {}
        response = await client.request(method, path, params=params, body=data, headers=headers)
        await response.close()
        return response.status, _parse(response.body)

    return call


class HttpApi:
    """Requests and watches over HTTP(S) to a cluster's base URL; the headers are asked for on every request,
    so that credentials which expire (e.g. from an exec plugin) are renewed."""

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        headers: Callable[[], Mapping[str, str]] = dict,
        user_agent: str = "kopf-sim",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._ssl = ssl_context
        self._headers = headers
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True)
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": self._user_agent},
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __call__(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> tuple[int, Any]:
        headers = dict(self._headers())
        if body is not None:
            headers["Content-Type"] = content_type
        data = json.dumps(body).encode() if body is not None else None
        async with self._http().request(
            method,
            self.base_url + path,
            params=params,
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=60),
        ) as response:
            return response.status, _parse(await response.read())

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[JsonDict]:
        """The events of one watch request until the server ends it; an HTTP error is one ``ERROR`` event."""
        query = {**params, "watch": "true"}
        async with self._http().get(self.base_url + path, params=query, headers=dict(self._headers())) as response:
            if response.status >= 400:
                answer = _parse(await response.read())
                yield {
                    "type": "ERROR",
                    "object": answer
                    if isinstance(answer, dict)
                    else {"kind": "Status", "code": response.status, "message": str(answer)},
                }
                return
            buffer = b""
            async for chunk in response.content.iter_any():  # objects may be longer than aiohttp's line limit
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    event = json.loads(line) if line.strip() else None
                    if isinstance(event, dict):
                        yield event


def _parse(body: bytes) -> Any:
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip()


def resource_path(
    group: str,
    version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    parts = [f"/apis/{group}/{version}" if group else f"/api/{version}"]
    if namespace:
        parts.append(f"namespaces/{namespace}")
    parts.append(plural)
    if name is not None:
        parts.append(name)
        if subresource:
            parts.append(subresource)
    return "/".join(parts)


@dataclasses.dataclass(frozen=True)
class Served:
    """One served resource (its preferred or a requested version), as the discovery lists describe it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    has_status: bool = False

    @property
    def qualified(self) -> str:
        """``plural.group`` (``plural`` for the core group), as kubectl names a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        return resource_path(
            self.group, self.version, self.plural, namespace if self.namespaced else None, name, subresource
        )

    def matches(self, name: str) -> bool:
        """Whether kubectl would take ``name`` for this resource: plural, singular, short name or kind,
        optionally followed by ``.group``."""
        wanted = name.lower()
        for known in {self.plural, self.singular, self.kind.lower(), *self.short_names} - {""}:
            if wanted == known or (self.group and wanted == f"{known}.{self.group}"):
                return True
        return False


class Discovery:
    """The served resources by group-version, read from the legacy lists and cached until :meth:`forget`."""

    def __init__(self, api: Api) -> None:
        self._api = api
        self._lists: dict[str, list[Served] | None] = {}
        self._preferred: dict[str, str] | None = None

    def forget(self) -> None:
        self._lists.clear()
        self._preferred = None

    async def group_version(self, group: str, version: str) -> list[Served] | None:
        """The resources of one group-version, or None if it is not served."""
        key = f"{group}/{version}" if group else version
        if key not in self._lists:
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            code, answer = await self._api("GET", path)
            if code in (404, 503):
                self._lists[key] = None
            elif code >= 400:
                raise ApiFailure("GET", path, code, answer)
            else:
                self._lists[key] = _parse_resource_list(group, version, answer)
        return self._lists[key]

    async def served(self, group: str, version: str, plural: str) -> Served | None:
        for info in await self.group_version(group, version) or ():
            if info.plural == plural:
                return info
        return None

    async def preferred_versions(self) -> dict[str, str]:
        """Every served group and its preferred version (the core group is ``""``)."""
        if self._preferred is None:
            preferred = {"": "v1"}
            answer = await request(self._api, "GET", "/apis")
            for group in (answer or {}).get("groups") or ():
                version = (group.get("preferredVersion") or {}).get("version") or next(
                    (v.get("version") for v in group.get("versions") or ()), None
                )
                if group.get("name") and version:
                    preferred[str(group["name"])] = str(version)
            self._preferred = preferred
        return self._preferred

    async def everything(self) -> list[Served]:
        """All resources at their groups' preferred versions, in a stable order (core first)."""
        found: list[Served] = []
        for group, version in (await self.preferred_versions()).items():
            found.extend(await self.group_version(group, version) or ())
        return found

    async def find(self, name: str) -> Served | None:
        """The resource that kubectl would take ``name`` for, at its preferred version."""
        for info in await self.everything():
            if info.matches(name):
                return info
        return None


def _parse_resource_list(group: str, version: str, answer: Any) -> list[Served]:
    entries = [entry for entry in (answer or {}).get("resources") or () if isinstance(entry, dict)]
    with_status = {
        str(entry.get("name", "")).partition("/")[0]
        for entry in entries
        if str(entry.get("name", "")).endswith("/status")
    }
    return [
        Served(
            group=group,
            version=version,
            plural=str(entry["name"]),
            kind=str(entry.get("kind", "")),
            namespaced=bool(entry.get("namespaced")),
            singular=str(entry.get("singularName") or ""),
            short_names=tuple(entry.get("shortNames") or ()),
            verbs=tuple(entry.get("verbs") or ()),
            has_status=entry["name"] in with_status,
        )
        for entry in entries
        if "/" not in str(entry.get("name", "/"))
    ]
