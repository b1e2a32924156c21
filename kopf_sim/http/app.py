"""The HTTP face of the simulated apiserver: an aiohttp application over one :class:`Cluster`.

It parses the REST paths, query parameters and bodies as the apiserver does, calls the store,
and renders results, lists, tables, watch streams and ``Status`` errors on the wire.

The logic reads only what :class:`ApiRequest` names of a request, so that a client in the same
process can call it without the HTTP framing (:mod:`kopf_sim.transports.direct`), and get the same bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from aiohttp import web, web_app
from aiohttp.web_protocol import RequestPayloadError
from multidict import MultiMapping

from kopf_sim.admission.attributes import REQUESTING_USER
from kopf_sim.admission.control import AdmissionControl
from kopf_sim.cel import authorizer as cel_authorizer
from kopf_sim.http import bodies, discovery, openapi, queries, reviews, tokenrequests
from kopf_sim.http.routes import Router, path_segments
from kopf_sim.http.yamlbodies import parse_yaml
from kopf_sim.kube import errors, tables
from kopf_sim.kube.jsoncodec import compact_bytes
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.resources import Catalogue, ResourceType
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.rbac.access import Access, Identity
from kopf_sim.rbac.attributes import Attributes, verb_of
from kopf_sim.rbac.users import User
from kopf_sim.store import lagging
from kopf_sim.store.cluster import Cluster
from kopf_sim.store.pipeline import RequestOptions
from kopf_sim.store.stored import Stored
from kopf_sim.store.watching import Subscription, WatchEvent
from kopf_sim.writes import gotypes, preparing, scales, typecheck
from kopf_sim.writes import options as writeoptions

logger = logging.getLogger(__name__)

REQUEST_BODY_LIMIT = 3 * 1024 * 1024
CLUSTER_KEY = web.AppKey("kopf_sim.cluster", Cluster)
ACCESS_KEY = web.AppKey("kopf_sim.rbac.access", Access)
ADMISSION_KEY = web.AppKey("kopf_sim.admission.webhooks", AdmissionControl)
JSON = "application/json"
_GENERIC_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_LONGEST_WAIT = 3600.0  # a watch re-checks its deadline at least this often (no timer of a huge duration)
_CHUNK_SIZE = 64 * 1024  # a watch sends what it has by chunks of about this size (its start may be huge)


class ApiRequest(Protocol):
    """What the server's logic reads of a request: an aiohttp request, or a direct call (:mod:`.direct`)."""

    @property
    def method(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def query(self) -> MultiMapping[str]: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def host(self) -> str: ...

    @property
    def content_length(self) -> int | None: ...

    async def read(self) -> bytes: ...


#: The warnings of the request being handled (sent as ``Warning`` headers, also with errors).
_request_warnings: contextvars.ContextVar[list[str]] = contextvars.ContextVar("kopf_sim_request_warnings")


@dataclasses.dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""

    rtype: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    legacy_watch: bool


@dataclasses.dataclass
class ServerOptions:
    bookmark_interval: float = 60.0  # seconds between BOOKMARK events on idle watches
    aggregated_discovery: bool = True  # serve apidiscovery.k8s.io/v2 when asked (off: as an older apiserver)
    default_watch_timeout: float = 1800.0  # when the client gives no timeoutSeconds
    enforce_rbac: bool = False  # 403 for requests that the stored RBAC does not allow (kopf-sim serve --rbac)


def dumps(data: Any) -> bytes:
    return compact_bytes(data) + b"\n"


def encoded_response(body: bytes, status: int = 200, *, content_type: str = JSON) -> web.Response:
    return web.Response(body=body, status=status, headers={"Content-Type": content_type})


def json_response(
    data: Any, status: int = 200, *, content_type: str = JSON, warnings: list[str] | None = None
) -> web.Response:
    response = encoded_response(dumps(data), status, content_type=content_type)
    for warning in warnings or ():
        response.headers.add("Warning", _warning_header(warning))
    return response


def error_response(error: errors.ApiError) -> web.Response:
    response = json_response(error.to_status(), error.code)
    response.headers.update(error.headers)
    return response


def build_app(cluster: Cluster, options: ServerOptions | None = None) -> web.Application:
    """The simulated apiserver as an aiohttp application (serve it, or pipe into it in memory)."""
    app = web.Application(client_max_size=REQUEST_BODY_LIMIT + 1)
    app[CLUSTER_KEY] = cluster
    app[ADMISSION_KEY] = cluster.admission
    api = ApiServer(cluster, options or ServerOptions())
    app[API_KEY] = api
    app[ACCESS_KEY] = api.access
    app.router.add_route("*", r"/{tail:[\s\S]*}", api.dispatch)

    async def close_watches(_: web.Application) -> None:
        cluster.close_watches()

    app.on_shutdown.append(close_watches)
    app.on_cleanup.append(_forget_cached_handlers)
    return app


async def _forget_cached_handlers(_: web.Application) -> None:
    """Let a finished app go: aiohttp caches the middleware chains of the last 1,024 apps (and all they hold).

    A test session makes a fresh simulated cluster (and app) per test; without this, up to a thousand
    clusters with their objects and event loops would stay in memory, and slow the garbage collector.
    """
    cached = getattr(web_app, "_cached_build_middleware", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()


class ApiServer:
    def __init__(self, cluster: Cluster, options: ServerOptions) -> None:
        self.cluster = cluster
        self.options = options
        self.access = Access(cluster, enforce=options.enforce_rbac, clock=cluster.clock)
        # Encoded discovery documents by form and URL path, valid for one catalogue at one revision.
        self._documents: dict[tuple[bool, tuple[str, ...]], bytes] = {}
        self._documents_of: tuple[Catalogue, int] | None = None
        self._shareable: tuple[ResourceType, ...] | None = None  # the types of that catalogue, as a cache key
        self._swagger_of: tuple[Catalogue, int] | None = None
        self._swagger_doc: dict[str, Any] = {}
        self._swagger_bodies: dict[bool, bytes] = {}  # by protobuf-or-not

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        """The aiohttp handler: a response, or a watch stream written out as it goes."""
        outcome = await self.handle(request)
        if isinstance(outcome, WatchStream):
            return await outcome.write_to(request)
        return outcome

    async def handle(self, request: ApiRequest) -> web.Response | WatchStream:
        """A response (errors as ``Status`` responses), or an opened watch stream (for ``watch`` requests)."""
        warnings: list[str] = []
        token = _request_warnings.set(warnings)
        user_token = REQUESTING_USER.set(None)  # set by _resource once the user is known; not beyond this request
        decide_token = cel_authorizer.DECIDE.set(self._decide)  # CEL's `authorizer` in admission, by our RBAC
        try:
            try:
                outcome = await self._dispatch(request)
            except errors.ApiError as exc:
                response = error_response(exc)
            except web.HTTPRequestEntityTooLarge:
                response = error_response(errors.request_too_large(REQUEST_BODY_LIMIT))
            except Exception as exc:  # a bug of ours: still a Status (never text/plain), and a traceback in the log
                logger.exception(f"Internal error while handling {request.method} {request.path}")
                response = error_response(errors.internal_error(exc, f"{request.method} {request.path}"))
            else:
                if isinstance(outcome, WatchStream):
                    outcome.warnings = list(warnings)
                else:
                    sent = outcome.headers.getall("Warning", [])
                    for header in (_warning_header(warning) for warning in warnings):
                        if header not in sent:
                            outcome.headers.add("Warning", header)
                return outcome
            for warning in warnings:  # warnings reach the client even when the request fails
                response.headers.add("Warning", _warning_header(warning))
            return response
        finally:
            cel_authorizer.DECIDE.reset(decide_token)
            REQUESTING_USER.reset(user_token)
            _request_warnings.reset(token)

    async def _dispatch(self, request: ApiRequest) -> web.Response | WatchStream:
        """Find the request's route in the tables (:data:`PAGES`, :data:`RESOURCES`) and call its handler."""
        parts = path_segments(request.path)
        page = PAGES.resolve(parts)
        if page is not None:
            page_route, params = page
            return await page_route.handler(request.method)(self, request, params)
        resource = RESOURCES.resolve(parts)
        if resource is None:
            raise errors.page_not_found()
        resource_route, params = resource
        target = self._target(params)
        identity = self._authorize(request, target)  # before the method's check, as the apiserver's filters
        if target.rtype.verbs == ("create",):
            return await self._review(request, target, identity)
        return await resource_route.handler(request.method)(self, request, target)

    # -- Pages: discovery, OpenAPI, health, version ----------------------------------------------

    async def _root(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        return json_response({"paths": ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version"]})

    async def _probe(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def _version(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        return json_response(discovery.version_info(self.cluster.version))

    async def _not_found(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        raise errors.page_not_found()

    async def _api_root(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        """``/api`` or ``/apis``: aggregated discovery if the client asks for it and the server serves it."""
        parts = path_segments(request.path)
        if self.options.aggregated_discovery and discovery.wants_aggregated(request.headers.get("Accept", "")):
            return self._discovery(parts, aggregated_form=True)
        if parts == ["api"]:  # not cached: it names the server's address as the client reached it
            return json_response(discovery.core_versions(request.host))
        return self._discovery(parts)

    async def _api_discovery(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        return self._discovery(path_segments(request.path))

    async def _openapi_index(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        return json_response(openapi.openapi_index(self._openapi_kinds()))

    async def _openapi_group_version(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        doc = openapi.openapi_group_version(self._openapi_kinds(), params.get("group", ""), params["version"])
        if doc is None:
            raise errors.page_not_found()
        return json_response(doc)

    def _openapi_kinds(self) -> list[openapi.ServedKind]:
        return [openapi_kind(rtype) for rtype in self.cluster.catalogue]

    async def _swagger(self, request: ApiRequest, params: Mapping[str, str]) -> web.Response:
        """``/openapi/v2``: JSON, or protobuf for kubectl; encoded once per change of the served resources."""
        from kopf_sim.http import swagger, swagger_proto

        catalogue = self.cluster.catalogue
        if self._swagger_of != (catalogue, catalogue.revision):
            self._swagger_doc = swagger.swagger_document((openapi_kind(t) for t in catalogue), self.cluster.version)
            self._swagger_bodies.clear()
            self._swagger_of = (catalogue, catalogue.revision)
        as_protobuf = swagger_proto.ACCEPTED in request.headers.get("Accept", "")
        body = self._swagger_bodies.get(as_protobuf)
        if body is None:
            encode = swagger_proto.encode_document if as_protobuf else dumps
            body = self._swagger_bodies[as_protobuf] = encode(self._swagger_doc)
        if as_protobuf:
            return encoded_response(body, content_type=swagger_proto.CONTENT_TYPE)
        return encoded_response(body)

    def _discovery(self, parts: list[str], *, aggregated_form: bool = False) -> web.Response:
        """A discovery document, encoded once per change of the catalogue (clients ask for them often)."""
        catalogue = self.cluster.catalogue
        if self._documents_of != (catalogue, catalogue.revision):
            self._documents.clear()
            self._documents_of = (catalogue, catalogue.revision)
            self._shareable = discovery.shareable(catalogue)
        path = tuple(parts)
        body = self._documents.get((aggregated_form, path))
        if body is None:
            body = self._documents[aggregated_form, path] = _encoded_discovery(
                catalogue, self._shareable, path, aggregated_form=aggregated_form
            )
        content_type = discovery.AGGREGATED_CONTENT_TYPE if aggregated_form else JSON
        return encoded_response(body, content_type=content_type)

    # -- Resources -------------------------------------------------------------------------------

    def _target(self, params: Mapping[str, str]) -> Target:
        """The resource type and object that a resource route's variables name (a 404 if none is served)."""
        rtype = self.cluster.catalogue.lookup(params.get("group", ""), params["version"], params["resource"])
        namespace = params.get("namespace")
        if rtype is None or (namespace is not None and not rtype.namespaced):
            raise errors.page_not_found()
        subresource = params.get("subresource")
        if subresource is not None and subresource not in rtype.subresources:
            raise errors.page_not_found()
        return Target(rtype, namespace, params.get("name"), subresource, legacy_watch="watch" in params)

    def _authorize(self, request: ApiRequest, target: Target) -> Identity:
        """The requesting user, if RBAC allows the request (a 403 if not); for reads and watches too."""
        if target.rtype.deprecation_warning:
            _warnings().append(target.rtype.deprecation_warning)
        identity = self.access.identify(request.headers)
        watching = target.legacy_watch or _flag(request.query.get("watch"))
        verb = verb_of(request.method, named=target.name is not None, watch=watching)
        rtype = target.rtype
        attrs = Attributes(
            verb, rtype.group, rtype.plural, target.subresource or "", target.namespace or "", target.name or ""
        )
        self.access.authorize(identity, attrs)  # before admission
        user = identity.user
        REQUESTING_USER.set({"username": user.name, "groups": list(user.groups)})  # for admission's userInfo
        return identity

    def _decide(self, check: cel_authorizer.Check) -> tuple[bool, str]:
        """An admission expression's ``authorizer.….check(verb)``: RBAC's decision (non-resource paths: open)."""
        user = User(check.user, check.groups)
        if check.path:
            return "system:authenticated" in user.groups, ""
        attrs = Attributes(check.verb, check.group, check.resource, check.subresource, check.namespace, check.name)
        decision = self.access.decide(user, attrs)
        return decision.allowed, decision.reason

    async def _list_or_watch(self, request: ApiRequest, target: Target) -> web.Response | WatchStream:
        if _flag(request.query.get("watch")):
            return await self._watch(request, target)
        return self._list(request, target)

    def _namespace_for_write(self, target: Target) -> str | None:
        if target.rtype.namespaced and target.namespace is None:
            raise errors.page_not_found()
        return target.namespace

    async def _get(self, request: ApiRequest, target: Target) -> web.Response:
        assert target.name is not None
        if target.rtype.namespaced and target.namespace is None:
            raise errors.page_not_found()
        lag = lagging.read_lag.get()
        as_table = tables.wants_table(request.headers.get("Accept", ""))
        if lag > 0:  # a stale read (an injected fault)
            obj = self._stale_object(target, lag)
        else:
            stored = self.cluster.stored(target.rtype.storage_key, target.namespace, target.name)
            if stored is None:
                raise errors.not_found(target.rtype.plural, target.rtype.group, target.name)
            if stored.api_version == target.rtype.api_version and target.subresource != "scale" and not as_table:
                return encoded_response(stored.raw + b"\n")  # as stored: encoded once for all its readers
            obj = self.cluster.present(stored.obj, target.rtype)
        if target.subresource == "scale":
            return json_response(scales.scale_of(target.rtype, obj))
        if as_table:
            list_meta = {"resourceVersion": meta(obj).get("resourceVersion", "")}
            table = tables.table(
                target.rtype,
                [obj],
                self.cluster.clock(),
                list_meta=list_meta,
                include=request.query.get("includeObject", "Metadata"),
            )
            return json_response(table, content_type=tables.TABLE_CONTENT_TYPE)
        return json_response(obj)

    def _stale_object(self, target: Target, lag: int) -> JsonDict:
        """
        An older version of the object that is there now: ``lag`` revisions ago, or before its latest changes.

        Only the content lags, not whether the object exists nor which one it is: a GET by name is a quorum read
        on a real apiserver, and operators rightly rely on it to know if a child is there (get-or-create). A
        stale GET that showed a deleted namesake's child (before the garbage collector's delete) made correct
        operators look broken. Lists stay as a lagging cache serves them, objects just made missing from them.
        """
        assert target.name is not None
        current = self.cluster.get(target.rtype, target.namespace, target.name)  # gone: 404, as it is
        if lagging.read_lag_per_object.get():  # before its latest change(s)
            rv = self.cluster.revision_before(target.rtype.storage_key, target.namespace, target.name, changes=lag)
        else:  # as a cache lagging ``lag`` revisions of the whole cluster would serve it
            rv = self.cluster.rv - lag
        try:
            older = self.cluster.get_at(target.rtype, target.namespace, target.name, rv)
        except errors.ApiError:  # not made yet at that revision
            return current
        return older if meta(older).get("uid") == meta(current).get("uid") else current

    def _selectors(self, request: ApiRequest, target: Target) -> tuple[LabelSelector, FieldSelector]:
        labels = LabelSelector.parse(request.query.get("labelSelector"))
        fields = FieldSelector.parse(request.query.get("fieldSelector"), _GENERIC_FIELDS | target.rtype.field_selectors)
        return labels, fields

    def _list(self, request: ApiRequest, target: Target) -> web.Response:
        labels, fields = self._selectors(request, target)
        queries.check_list_options(request.query, watch=False)
        limit = queries.limit(request.query)
        lag = lagging.read_lag.get()
        at_rv = self.cluster.rv - lag if lag > 0 else None
        if lag > 0 and lagging.read_lag_per_object.get():  # the list before the latest change(s) of its objects

            def selected(obj: JsonDict) -> bool:
                return labels.matches(meta(obj).get("labels")) and fields.matches(obj)

            key = target.rtype.storage_key
            at_rv = self.cluster.revision_before(key, target.namespace, changes=lag, matches=selected)
        listing = self.cluster.read_list(
            target.rtype,
            target.namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=request.query.get("continue") or None,
            at_rv=at_rv,
        )
        if tables.wants_table(request.headers.get("Accept", "")):
            table = tables.table_json(
                target.rtype,
                listing.raws(),
                self.cluster.clock(),
                list_meta=listing.metadata,
                include=request.query.get("includeObject", "Metadata"),
            )
            return encoded_response(table + b"\n", content_type=tables.TABLE_CONTENT_TYPE)
        return encoded_response(listing.to_json() + b"\n")

    async def _create(self, request: ApiRequest, target: Target) -> web.Response:
        namespace = self._namespace_for_write(target)
        body = await _read_object(request, target.rtype)
        warnings = _warnings()
        obj = await self.cluster.writes.create(
            target.rtype, namespace, body, **_write_options(request, "CreateOptions"), warnings=warnings
        )
        return json_response(obj, 201, warnings=warnings)

    async def _review(self, request: ApiRequest, target: Target, identity: Identity) -> web.Response:
        """A create-only resource (the authorization reviews): answered, never stored."""
        if request.method != "POST" or target.name is not None or target.legacy_watch:
            raise errors.method_not_allowed()
        _check_create_options(request)
        body = await _read_object(request, target.rtype)
        return json_response(reviews.review(target.rtype, target.namespace, body, self.access, identity), 201)

    async def _token_request(self, request: ApiRequest, target: Target) -> web.Response:
        """``kubectl create token``: a token of the service account, for its identity (see :mod:`.tokenrequests`)."""
        assert target.namespace is not None and target.name is not None
        _check_create_options(request)
        body = await _read_object(request, target.rtype)
        issued = tokenrequests.issue_token(self.cluster, self.access, target.namespace, target.name, body)
        return json_response(issued, 201)

    async def _update(self, request: ApiRequest, target: Target) -> web.Response:
        assert target.name is not None
        namespace = self._namespace_for_write(target)
        warnings = _warnings()
        body = await _read_object(request, target.rtype)
        written = _write_options(request, "UpdateOptions", field_validation=target.subresource != "scale")
        obj = await self.cluster.writes.update(
            target.rtype, namespace, target.name, body, subresource=target.subresource, **written, warnings=warnings
        )
        return json_response(obj, warnings=warnings)

    async def _patch(self, request: ApiRequest, target: Target) -> web.Response:
        assert target.name is not None
        namespace = self._namespace_for_write(target)
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type not in preparing.PATCH_TYPES:
            raise errors.unsupported_media_type(content_type, preparing.PATCH_TYPES)
        written = _write_options(request, "PatchOptions", content_type=content_type)
        patch = await _read_patch(request, content_type)
        warnings = _warnings()
        existed = self.cluster.peek(target.rtype.storage_key, namespace, target.name) is not None
        obj = await self.cluster.writes.patch(
            target.rtype,
            namespace,
            target.name,
            patch,
            content_type,
            subresource=target.subresource,
            **written,
            force=_flag(request.query.get("force")),
            warnings=warnings,
        )
        return json_response(obj, 200 if existed else 201, warnings=warnings)

    async def _delete(self, request: ApiRequest, target: Target) -> web.Response:
        assert target.name is not None
        namespace = self._namespace_for_write(target)
        if target.subresource is not None:
            raise errors.method_not_allowed()
        options = await _read_delete_options(request)
        dry_run = options.get("dryRun") == ["All"]
        warnings = _warnings()
        result = await self.cluster.writes.delete(
            target.rtype, namespace, target.name, options, dry_run=dry_run, warnings=warnings
        )
        return json_response(result, warnings=warnings)

    async def _delete_collection(self, request: ApiRequest, target: Target) -> web.Response:
        labels, fields = self._selectors(request, target)
        options = await _read_delete_options(request)
        dry_run = options.get("dryRun") == ["All"]
        warnings = _warnings()
        result = await self.cluster.writes.delete_collection(
            target.rtype,
            target.namespace,
            labels=labels,
            fields=fields,
            options=options,
            dry_run=dry_run,
            warnings=warnings,
        )
        return json_response(result, warnings=warnings)

    # -- Watching --------------------------------------------------------------------------------

    async def _watch(self, request: ApiRequest, target: Target) -> WatchStream:
        query = request.query
        labels, fields = self._selectors(request, target)
        if target.name is not None:
            fields = FieldSelector(
                fields.requirements + FieldSelector.parse(f"metadata.name={target.name}", _GENERIC_FIELDS).requirements
            )
        allow_bookmarks = _flag(query.get("allowWatchBookmarks"))
        send_initial = _flag(query.get("sendInitialEvents"))
        queries.check_list_options(query, watch=True)
        timeout = queries.watch_timeout(query, self.options.default_watch_timeout)
        subscription = self.cluster.watch(
            target.rtype,
            target.namespace,
            labels=labels,
            fields=fields,
            resource_version=query.get("resourceVersion"),
            send_initial_events=send_initial,
        )
        held = lagging.withholding.get()
        if held is not None:  # withheld events (an injected fault): late, or coalesced per object
            subscription.withhold(held)
        if send_initial and allow_bookmarks and not subscription.closed:
            subscription.push(self._bookmark(target.rtype, initial_end=True))
        as_table = tables.wants_table(request.headers.get("Accept", ""))
        return WatchStream(
            self._stream(
                subscription,
                target,
                allow_bookmarks=allow_bookmarks,
                timeout=timeout,
                as_table=as_table,
                include=query.get("includeObject", "Metadata"),
            ),
            subscription,
            content_type=tables.TABLE_CONTENT_TYPE if as_table else JSON,
        )

    def _bookmark(self, rtype: ResourceType, *, initial_end: bool = False) -> WatchEvent:
        metadata: JsonDict = {"resourceVersion": str(self.cluster.rv)}
        if initial_end:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        return WatchEvent(
            "BOOKMARK", {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": metadata}, self.cluster.rv
        )

    async def _stream(
        self,
        subscription: Subscription,
        target: Target,
        *,
        allow_bookmarks: bool,
        timeout: float,
        as_table: bool,
        include: str,
    ) -> AsyncGenerator[bytes, None]:
        """The watch events as they come, a chunk of lines at a time, until the timeout or the close."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        interval = self.options.bookmark_interval
        next_bookmark = next_bookmark_time(loop.time(), deadline, interval) if allow_bookmarks else None
        first_table = True
        api_version = target.rtype.api_version
        while True:
            chunk = bytearray()
            while len(chunk) < _CHUNK_SIZE and (event := subscription.pop()) is not None:
                if event.type in ("ADDED", "MODIFIED", "DELETED"):
                    for observer in list(self.cluster.deliveries):
                        observer(target.rtype, event)
                payload = event.payload
                if isinstance(payload, Stored) and payload.api_version == api_version and not as_table:
                    chunk += b'{"type":"%s","object":%s}\n' % (event.type.encode(), payload.raw)
                    continue
                obj = event.obj
                if event.type in ("ADDED", "MODIFIED", "DELETED"):
                    obj = self.cluster.present(obj, target.rtype)
                    if as_table:
                        obj = tables.table(
                            target.rtype,
                            [obj],
                            self.cluster.clock(),
                            list_meta={"resourceVersion": meta(obj).get("resourceVersion", "")},
                            include=include,
                            with_columns=first_table,
                        )
                        first_table = False
                chunk += dumps({"type": event.type, "object": obj})
            if chunk:
                yield bytes(chunk)
                continue
            if subscription.closed:
                return
            now = loop.time()
            if now >= deadline:
                return
            if next_bookmark is not None and now >= next_bookmark:
                subscription.push(self._bookmark(target.rtype))
                next_bookmark = next_bookmark_time(now, deadline, interval)
                continue
            until = deadline if next_bookmark is None else min(deadline, next_bookmark)
            await subscription.wait(min(max(0.0, until - now), _LONGEST_WAIT))


PRE_DEADLINE_BOOKMARK = 2.0  # seconds before a watch's deadline when the apiserver sends a last bookmark


def next_bookmark_time(now: float, deadline: float, interval: float) -> float | None:
    """When a watch with bookmarks gets its next one: every ``interval``, and once shortly before its deadline.

    As the apiserver's watch cache does, so that a client whose watch times out resumes from a recent
    version; None if no bookmark is due any more before the deadline.
    """
    due = min(now + interval, deadline - PRE_DEADLINE_BOOKMARK)
    return due if due > now else None


class WatchStream:
    """An opened watch: its chunks of event lines as they come; closed when the consumer is done."""

    def __init__(self, chunks: AsyncGenerator[bytes, None], subscription: Subscription, *, content_type: str) -> None:
        self.chunks = chunks
        self.content_type = content_type
        self.warnings: list[str] = []  # the request's warnings, sent as headers before the events
        self._subscription = subscription

    async def close(self) -> None:
        self._subscription.close()
        await self.chunks.aclose()

    async def write_to(self, request: web.Request) -> web.StreamResponse:
        """Stream it over HTTP (chunked), until it ends or the client goes away."""
        response = web.StreamResponse(headers={"Content-Type": self.content_type, "Transfer-Encoding": "chunked"})
        for warning in self.warnings:
            response.headers.add("Warning", _warning_header(warning))
        try:
            await response.prepare(request)
            async for chunk in self.chunks:
                await response.write(chunk)
        except (ConnectionResetError, ConnectionError):
            pass
        except Exception as exc:  # a bug of ours after the headers: the stream ends with an ERROR event
            logger.exception(f"Internal error while streaming {request.method} {request.path_qs}")
            status = errors.internal_error(exc, f"{request.method} {request.path}").to_status()
            with contextlib.suppress(ConnectionError):
                await response.write(dumps({"type": "ERROR", "object": status}))
        finally:
            await self.close()
        return response


API_KEY = web.AppKey("kopf_sim.api", ApiServer)

PageHandler = Callable[[ApiServer, ApiRequest, Mapping[str, str]], Awaitable[web.Response]]
ResourceHandler = Callable[[ApiServer, ApiRequest, Target], Awaitable[web.Response | WatchStream]]


def _read_only(handler: PageHandler) -> Mapping[str, PageHandler]:
    return {"GET": handler, "HEAD": handler}


#: What the server serves besides resources: read-only documents (other methods get a 405).
PAGES: Router[PageHandler] = Router(
    [
        ("/", _read_only(ApiServer._root)),
        ("/{probe:healthz|livez|readyz}", _read_only(ApiServer._probe)),
        ("/version", _read_only(ApiServer._version)),
        ("/openapi/v2", _read_only(ApiServer._swagger)),
        ("/openapi/v3", _read_only(ApiServer._openapi_index)),
        ("/openapi/v3/api/{version}", _read_only(ApiServer._openapi_group_version)),
        ("/openapi/v3/apis/{group}/{version}", _read_only(ApiServer._openapi_group_version)),
        ("/{head:api|apis}", _read_only(ApiServer._api_root)),
        ("/api/{version}", _read_only(ApiServer._api_discovery)),
        ("/apis/{group}", _read_only(ApiServer._api_discovery)),
        ("/apis/{group}/{version}", _read_only(ApiServer._api_discovery)),
        ("/{head:healthz|livez|readyz|version|openapi}/{tail*}", _read_only(ApiServer._not_found)),
    ]
)

_COLLECTION: Mapping[str, ResourceHandler] = {
    "GET": ApiServer._list_or_watch,
    "POST": ApiServer._create,
    "DELETE": ApiServer._delete_collection,
}
_OBJECT: Mapping[str, ResourceHandler] = {
    "GET": ApiServer._get,
    "PUT": ApiServer._update,
    "PATCH": ApiServer._patch,
    "DELETE": ApiServer._delete,
}
_LEGACY_WATCH: Mapping[str, ResourceHandler] = {"GET": ApiServer._watch}
_TOKEN: Mapping[str, ResourceHandler] = {"POST": ApiServer._token_request}


def _resource_rows() -> list[tuple[str, Mapping[str, ResourceHandler]]]:
    """The resource URLs of the core group and of the named groups, with the legacy ``/watch/`` prefix or not.

    The core group's ``namespaces/NAME/status|finalize`` are a namespace's subresources, not a namespace's
    resources (as in the apiserver); ``/watch/`` comes first, so that it is never taken for a resource.
    """
    rows: list[tuple[str, Mapping[str, ResourceHandler]]] = [
        ("/api/{version:v1}/namespaces/{namespace}/{resource:serviceaccounts}/{name}/{subresource:token}", _TOKEN),
    ]
    for prefix in ("/api/{version:v1}", "/apis/{group}/{version}"):
        for watch, collection, one in (("/{watch:watch}", _LEGACY_WATCH, _LEGACY_WATCH), ("", _COLLECTION, _OBJECT)):
            if prefix.startswith("/api/"):
                rows.append((f"{prefix}{watch}/{{resource:namespaces}}/{{name}}/{{subresource:status|finalize}}", one))
            for scope in ("/namespaces/{namespace}", ""):
                rows.append((f"{prefix}{watch}{scope}/{{resource}}", collection))
                rows.append((f"{prefix}{watch}{scope}/{{resource}}/{{name}}", one))
                rows.append((f"{prefix}{watch}{scope}/{{resource}}/{{name}}/{{subresource}}", one))
    return rows


#: The resources' URLs: resolved to a :class:`Target`, authorized, then handled by method.
RESOURCES: Router[ResourceHandler] = Router(_resource_rows())


def _encoded_discovery(
    catalogue: Catalogue, types: tuple[ResourceType, ...] | None, path: tuple[str, ...], *, aggregated_form: bool
) -> bytes:
    """A discovery document as sent, shared by the clusters that serve the same resources (fresh ones do).

    ``types``: the catalogue's :func:`~.discovery.shareable` key (None if it cannot be shared).
    A 404 if there is none at the path: errors are not cached, so made-up paths evict no documents.
    """
    if types is None:
        return _encode_discovery(catalogue, path, aggregated_form)
    return _shared_discovery(types, path, aggregated_form)


@functools.lru_cache(maxsize=64)
def _shared_discovery(types: tuple[ResourceType, ...], path: tuple[str, ...], aggregated_form: bool) -> bytes:
    return _encode_discovery(Catalogue(types), path, aggregated_form)


def _encode_discovery(catalogue: Catalogue, path: tuple[str, ...], aggregated_form: bool) -> bytes:
    doc = discovery.document(catalogue, path, aggregated_form=aggregated_form)
    if doc is None:
        raise errors.page_not_found()
    return dumps(doc)


def openapi_kind(rtype: ResourceType) -> openapi.ServedKind:
    from kopf_sim.writes import mergekeys

    strategies: dict[tuple[str, ...], tuple[str | None, str]] = {}
    if not rtype.custom:
        for path, strategy in mergekeys.list_strategies(rtype.kind_key).items():
            strategies[path] = (strategy.merge_key, strategy.strategy)
    return openapi.ServedKind(
        group=rtype.group,
        version=rtype.version,
        kind=rtype.kind,
        plural=rtype.plural,
        namespaced=rtype.namespaced,
        schema=rtype.schema,
        list_strategies=strategies,
        subresources=tuple(sorted(rtype.subresources)),
        returns_deleted_object=rtype.returns_deleted_object,
    )


# -- Request parsing -------------------------------------------------------------------------------


def _warning_header(text: str) -> str:
    """A ``Warning`` header as the apiserver sends it: code 299, no agent, the text quoted."""
    return f"299 - {json.dumps(text)}"


def _warnings() -> list[str]:
    """The warnings of this request (a list shared by its handlers, sent as ``Warning`` headers)."""
    return _request_warnings.get()


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def _write_options(
    request: ApiRequest, kind: str, *, content_type: str | None = None, field_validation: bool = True
) -> RequestOptions:
    """The dry run, field manager and field validation of a create, update or patch (a 422 if bad)."""
    query = request.query
    dry_run = query.getall("dryRun", [])
    given = query.get("fieldManager")
    validation = query.get("fieldValidation", "")
    writeoptions.check_write_options(
        kind,
        dry_run=dry_run,
        manager=given,
        field_validation=validation,
        force=query.get("force"),
        apply=content_type == preparing.APPLY_PATCH,
    )
    # Without one, the field manager is the client's user agent up to the first slash (as the apiserver).
    manager = given or request.headers.get("User-Agent", "unknown").split("/")[0][:128] or "unknown"
    written = RequestOptions(dry_run=bool(dry_run), manager=manager)
    if field_validation:
        written["field_validation"] = validation
    return written


def _check_create_options(request: ApiRequest) -> None:
    """The create options of a request whose result is not stored (reviews, token requests): a 422 if bad."""
    writeoptions.check_write_options(
        "CreateOptions",
        dry_run=request.query.getall("dryRun", []),
        manager=request.query.get("fieldManager"),
        field_validation=request.query.get("fieldValidation", ""),
    )


async def _read_body(request: ApiRequest) -> bytes:
    if request.content_length is not None and request.content_length > REQUEST_BODY_LIMIT:
        raise errors.request_too_large(REQUEST_BODY_LIMIT)
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise errors.request_too_large(REQUEST_BODY_LIMIT) from None
    except (web.HTTPException, ValueError, EOFError, ConnectionError, RequestPayloadError) as exc:
        raise errors.bad_request(f"the request body cannot be read: {_last_line(exc)}") from None
    if len(body) > REQUEST_BODY_LIMIT:
        raise errors.request_too_large(REQUEST_BODY_LIMIT)
    return body


def _last_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[-1].strip() if lines else type(exc).__name__


def _summary(raw: bytes, length: int = 30) -> str:
    """The start of a body, as the apiserver quotes it in decoding errors: as text if JSON, else in hex."""
    if not raw:
        return "<empty>"
    part, more = raw[:length], " ..." if len(raw) > length else ""
    if raw[:1] == b"{":
        return part.decode("utf-8", "replace") + more
    return part.hex() + more


async def _read_object(request: ApiRequest, rtype: ResourceType) -> Any:
    raw = await _read_body(request)
    content_type = request.headers.get("Content-Type", JSON).split(";")[0].strip() or JSON
    if content_type in ("application/yaml", "application/x-yaml"):
        try:
            return parse_yaml(raw)
        except bodies.BodyError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc.message}") from None
    if content_type == "application/vnd.kubernetes.protobuf":
        from kopf_sim.http import protobuf

        if rtype.custom:  # custom resources have no protobuf encoding, as in the apiserver
            raise errors.unsupported_media_type(content_type, [JSON, "application/yaml"])
        try:
            decoded = protobuf.decode_object(raw)
        except protobuf.UnknownKindError:
            raise errors.unsupported_media_type(content_type, [JSON, "application/yaml"]) from None
        except protobuf.ProtobufError as exc:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rtype.kind}): {exc.message}"
            ) from None
        try:
            bodies.check_depth(decoded)
        except bodies.BodyError as exc:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rtype.kind}): {exc.message}"
            ) from None
        return bodies.valid_strings(decoded)
    if content_type not in (JSON, "*/*"):
        raise errors.unsupported_media_type(content_type, [JSON, "application/yaml"])
    try:
        return bodies.parse_json(raw)
    except bodies.BodyError as exc:
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {rtype.kind}): "
            f"couldn't get version/kind; json parse error: {exc.message} "
            f"({_summary(raw)})"
        ) from None


async def _read_patch(request: ApiRequest, content_type: str) -> Any:
    raw = await _read_body(request)
    if content_type == preparing.APPLY_PATCH:
        if raw.lstrip()[:1] == b"{":  # JSON (as kubectl sends it) is YAML too, but parses faster as JSON
            with contextlib.suppress(bodies.BodyError):
                return bodies.parse_json(raw)
        try:
            return parse_yaml(raw)
        except bodies.BodyError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc.message}") from None
    try:
        return bodies.parse_json(raw)
    except bodies.BodyError as exc:
        raise errors.bad_request(f"error decoding patch: {exc.message}") from None


async def _read_delete_options(request: ApiRequest) -> Mapping[str, Any]:
    raw = await _read_body(request)
    options: dict[str, Any] = {}
    if raw.strip():
        try:
            parsed = bodies.parse_json(raw)
        except bodies.BodyError as exc:
            raise errors.bad_request(f"error decoding DeleteOptions: {exc.message}") from None
        if not isinstance(parsed, dict):
            raise errors.bad_request(
                f"json: cannot unmarshal {gotypes.json_kind(parsed)} into Go value of type v1.DeleteOptions"
            )
        typecheck.check_delete_options(parsed)
        options.update({key: value for key, value in parsed.items() if value is not None})
    if "propagationPolicy" in request.query:
        options["propagationPolicy"] = request.query["propagationPolicy"]
    if "gracePeriodSeconds" in request.query:
        options["gracePeriodSeconds"] = queries.integer(request.query, "gracePeriodSeconds")
    if "orphanDependents" in request.query:
        options["orphanDependents"] = _flag(request.query["orphanDependents"])
    if "dryRun" in request.query:
        options["dryRun"] = request.query.getall("dryRun")
    writeoptions.check_delete_options(options)
    return options
