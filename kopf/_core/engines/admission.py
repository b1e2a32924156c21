"""
Admission control: serving the admission reviews by the operator's validating/mutating handlers,
and managing the webhook configurations in the cluster.

Three parts:

* :func:`serve_admission_request` is the framework's callback (:class:`WebhookFn`) that webhook
  servers/tunnels call for every review: it selects the handlers (by the webhook id, the resource,
  the operation, the subresource, the filters), invokes them, and builds the review's response
  (allowed or denied, the warnings, the mutations as a base64-encoded JSON-patch).

* :func:`build_webhooks` & :func:`configuration_manager` put the handlers into the validating/mutating
  webhook configurations named by ``settings.admission.managed`` (if set): one webhook per handler,
  reached at the server's URL (or service path) with the handler id as the last path component.
  They are re-configured when the server/tunnel yields a new client config (e.g. a new tunnel URL)
  or when the served resources change; on a graceful exit, the non-persistent webhooks are removed.

* :func:`admission_webhook_server` runs ``settings.admission.server`` with the callback and feeds
  its client configs to the manager; :func:`in_process_handler` serves the reviews with no server
  at all (e.g. for a simulated apiserver that calls the webhooks in-process).

The servers/tunnels are above the core (in the kits), so they are used here only duck-typed:
a callable that accepts the callback and returns an async iterator of client configs, optionally
an async context manager (which may return a substitute server to use).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import re
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any, Protocol, cast

from kopf._cogs.clients import creating, deleting, patching
from kopf._cogs.clients import errors as clients_errors
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import bodies, diffs, ephemera, patches, reviews
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import Resource
from kopf._core.actions import errors as actions_errors
from kopf._core.actions import invocation, loggers
from kopf._core.engines.admission_errors import AdmissionError
from kopf._core.intents import filters, registries
from kopf._core.intents import handlers as handlers_
from kopf._core.intents.causes import WebhookType

logger = logging.getLogger(__name__)

#: How long apiservers wait for a webhook's response (seconds); Kubernetes allows 1..30.
DEFAULT_TIMEOUT_SECONDS = 30

#: The resources of the managed webhook configurations.
VALIDATING_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    kind="ValidatingWebhookConfiguration",
    namespaced=False,
)
MUTATING_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    kind="MutatingWebhookConfiguration",
    namespaced=False,
)
CONFIGURATION_RESOURCES: Mapping[WebhookType, Resource] = {
    WebhookType.VALIDATING: VALIDATING_CONFIGURATIONS,
    WebhookType.MUTATING: MUTATING_CONFIGURATIONS,
}

#: A label on the managed configurations (informational: they are found by their names).
MANAGED_LABEL = "kopf.zalando.org/managed"


class WebhookServerNotConfiguredError(Exception):
    """There are admission handlers, but no webhook server/tunnel to receive the admission reviews."""


# -------------------------------------------------------------------------------------------------
# Duck-typed collaborators from the layers above (the reactor's memories & insights).
# -------------------------------------------------------------------------------------------------


class MemoryLike(Protocol):
    memo: ephemera.AnyMemo


class MemoriesLike(Protocol):
    """What is needed from the reactor's per-object memories: the memos of the existing objects."""

    def __contains__(self, raw_body: object) -> bool: ...

    def recall(self, raw_body: Mapping[str, Any], *, memo: ephemera.AnyMemo = None) -> MemoryLike: ...


class InsightsLike(Protocol):
    """What is needed from the reactor's insights: the served resources, and when they change."""

    @property
    def resources(self) -> Collection[Resource]: ...

    @property
    def revision(self) -> int: ...

    @property
    def ready_resources(self) -> asyncio.Event: ...

    async def wait_for_revision(self, seen: int) -> int: ...


ReviewHandler = Callable[[Mapping[str, Any]], Awaitable[reviews.Response]]


# -------------------------------------------------------------------------------------------------
# Serving the admission reviews.
# -------------------------------------------------------------------------------------------------


async def serve_admission_request(
    request: reviews.Request | Mapping[str, Any],
    *,
    webhook: str | None = None,
    headers: reviews.Headers | None = None,
    sslpeer: reviews.SSLPeer | None = None,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    insights: InsightsLike | None = None,
    resources: Collection[Resource] | None = None,
    memories: MemoriesLike | None = None,
    memobase: ephemera.AnyMemo = None,
    indices: Mapping[str, Any] | None = None,
) -> reviews.Response:
    """
    Serve one admission review: invoke the relevant handlers and build the review's response.

    ``webhook`` is the handler id from the URL: only that handler is then considered.
    Without it, all admission handlers (validating & mutating) of the resource are used.

    The handlers' errors deny the admission: the admission errors with their message & code,
    all others with the code 500. With several failed handlers, one error is reported: the admission
    errors go first, then the permanent, the temporary, and the arbitrary errors. The errors
    of the handlers with ``ignore_failures=True`` are only logged: the admission is not denied by them.

    A review of an unknown resource or webhook id is denied with the code 404 (as a review response).
    A malformed review raises :class:`reviews.MalformedReviewError` (the servers answer 4xx).
    """
    review = reviews.check_request(request)
    payload = review["request"]
    known = resources if resources is not None else (insights.resources if insights is not None else None)
    resource = _find_resource(payload, registry=registry, resources=known)
    refusal = _refuse_unserved(review, resource=resource, webhook=webhook, registry=registry)
    if refusal is not None or resource is None:
        return refusal if refusal is not None else _respond(review, allowed=False, code=404)

    cause = _build_cause(
        payload,
        resource=resource,
        settings=settings,
        headers=headers,
        sslpeer=sslpeer,
        memories=memories,
        memobase=memobase,
        indices=indices,
    )
    candidates = registry.webhooks.get_handlers(
        resource,
        body=cause.body,
        old=cause.old,
        new=cause.new,
        kwargs=cause.kwargs(),
        id=webhook,
        operation=cause.operation,
        subresource=cause.subresource,
    )
    failures = await _invoke_handlers(candidates, cause=cause, settings=settings)
    if failures:
        return _deny(review, errors=[error for _, error in failures], warnings=cause.warnings)
    json_patch = cause.patch.as_json_patch() if cause.patch else []
    return _respond(review, allowed=True, warnings=cause.warnings, json_patch=json_patch)


def _refuse_unserved(
    review: reviews.Request,
    *,
    resource: Resource | None,
    webhook: str | None,
    registry: registries.OperatorRegistry,
) -> reviews.Response | None:
    """The denial (404) of a review of a resource or a webhook id that no admission handler serves, if so."""
    if resource is None:
        gvr = review["request"].get("resource") or {}
        text = ".".join(str(part) for part in (gvr.get("resource"), gvr.get("version"), gvr.get("group")) if part)
        return _respond(
            review,
            allowed=False,
            code=404,
            reason="NotFound",
            message=f"No admission handlers serve the resource {text or '(unspecified)'!r}.",
        )
    if webhook is not None and not any(h.id == webhook for h in registry.webhooks.get_resource_handlers(resource)):
        return _respond(
            review,
            allowed=False,
            code=404,
            reason="NotFound",
            message=f"No admission handler {webhook!r} serves the resource {resource.name!r}.",
        )
    return None


def _build_cause(
    payload: reviews.RequestPayload,
    *,
    resource: Resource,
    settings: OperatorSettings,
    headers: reviews.Headers | None,
    sslpeer: reviews.SSLPeer | None,
    memories: MemoriesLike | None,
    memobase: ephemera.AnyMemo,
    indices: Mapping[str, Any] | None,
) -> invocation.WebhookCause:
    """The handlers' kwargs for the review: the object (new, else old), the patch to fill, the request's details."""
    operation = payload.get("operation")
    new: Mapping[str, Any] | None = _as_mapping(payload.get("object"))
    old: Mapping[str, Any] | None = _as_mapping(payload.get("oldObject"))
    raw_body: Mapping[str, Any] = new if new is not None else (old if old is not None else {})
    return invocation.WebhookCause(
        logger=loggers.LocalObjectLogger(body=raw_body, settings=settings),
        memo=_get_memo(operation, raw_body, memories=memories, memobase=memobase),
        indices=indices if indices is not None else {},
        resource=resource,
        patch=patches.Patch(body=raw_body),
        body=bodies.Body(raw_body),
        dryrun=bool(payload.get("dryRun", False)),
        warnings=[],
        subresource=payload.get("subResource") or None,
        userinfo=payload.get("userInfo") or {},
        headers=headers if headers is not None else {},
        sslpeer=sslpeer if sslpeer is not None else {},  # an empty mapping when unverified, as published
        operation=operation,
        old=old,
        new=new,
        diff=diffs.diff(old, new) if operation == "UPDATE" else None,
    )


async def _invoke_handlers(
    handlers: Iterable[handlers_.WebhookHandler],
    *,
    cause: invocation.WebhookCause,
    settings: OperatorSettings,
) -> list[tuple[handlers_.WebhookHandler, Exception]]:
    """Invoke every handler once; the failures that deny the admission (not of ``ignore_failures``) are returned."""
    failures: list[tuple[handlers_.WebhookHandler, Exception]] = []
    for handler in handlers:
        kwargs: dict[str, Any] = {"param": handler.param}
        if handler.field:
            kwargs.update(invocation.reduce_to_field(cause.cached_framework_kwargs(), handler.field))
        # The messages are worded as in the published framework: the operators' tests wait for them.
        try:
            await invocation.invoke(handler.fn, cause=cause, settings=settings, kwargs=kwargs)
        except Exception as e:
            if handler.ignore_failures:
                cause.logger.warning(f"Webhook {handler.id!r} failed with an exception and will ignore it: {e}")
            elif isinstance(e, (AdmissionError, actions_errors.PermanentError)):  # an intended rejection
                cause.logger.error(f"Webhook {handler.id!r} failed permanently: {e}")
                failures.append((handler, e))
            else:
                cause.logger.error(
                    f"Webhook {handler.id!r} failed with an exception and will stop now: {e}", exc_info=True
                )
                failures.append((handler, e))
        else:
            cause.logger.info(f"Webhook {handler.id!r} succeeded.")
    return failures


def _deny(review: reviews.Request, *, errors: Collection[Exception], warnings: Iterable[str]) -> reviews.Response:
    """The denial by the handlers' errors: the most preferred one is reported (see :func:`_error_priority`)."""
    error = min(errors, key=_error_priority)
    if not isinstance(error, AdmissionError):
        return _respond(review, allowed=False, code=500, message=str(error) or type(error).__name__, warnings=warnings)
    code = error.code if error.code is not None else 500
    message = error.message or ""
    details = _details(review, error.causes) if error.causes else None
    if details is not None and not message:
        message = _invalid_message(details)
    return _respond(
        review, allowed=False, code=code, message=message, reason=error.reason, details=details, warnings=warnings
    )


def _details(review: reviews.Request, causes: list[reviews.StatusCause]) -> reviews.StatusDetails:
    """The status details of a denial with field causes, about the reviewed object (as the apiserver's own)."""
    payload = review["request"]
    gvk = payload.get("kind") or {}
    body = _as_mapping(payload.get("object")) or _as_mapping(payload.get("oldObject")) or {}
    name = payload.get("name") or (body.get("metadata") or {}).get("name") or ""
    details: reviews.StatusDetails = {}
    if name:
        details["name"] = str(name)
    if gvk.get("group"):
        details["group"] = str(gvk["group"])
    if gvk.get("kind"):
        details["kind"] = str(gvk["kind"])
    details["causes"] = [reviews.StatusCause(**cause) for cause in causes]
    return details


def _invalid_message(details: reviews.StatusDetails) -> str:
    """``Kind.group "name" is invalid: field: message`` (several in brackets), as the apiserver words it."""
    kind = ".".join(part for part in (details.get("kind"), details.get("group")) if part) or "object"
    texts = [f"{c['field']}: {c['message']}" if c.get("field") else c.get("message", "") for c in details["causes"]]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return f'{kind} "{details.get("name", "")}" is invalid: {joined}'


def _error_priority(error: Exception) -> int:
    """The lower, the more preferred for reporting: admission, permanent, temporary, other errors."""
    if isinstance(error, AdmissionError):
        return 0
    if isinstance(error, actions_errors.PermanentError):
        return 1
    if isinstance(error, actions_errors.TemporaryError):
        return 2
    return 3


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _find_resource(
    payload: Mapping[str, Any],
    *,
    registry: registries.OperatorRegistry,
    resources: Collection[Resource] | None,
) -> Resource | None:
    """The served resource of the review (as discovered, if known), if any admission handler serves it."""
    gvr = payload.get("resource")
    if not isinstance(gvr, Mapping) or not gvr.get("resource") or not gvr.get("version"):
        return None
    group, version, plural = str(gvr.get("group") or ""), str(gvr["version"]), str(gvr["resource"])
    for resource in resources or ():
        if (resource.group, resource.version, resource.plural) == (group, version, plural):
            return resource if registry.webhooks.has_handlers(resource) else None
    gvk = payload.get("kind")
    kind = str(gvk["kind"]) if isinstance(gvk, Mapping) and gvk.get("kind") else None
    resource = Resource(group, version, plural, kind=kind, namespaced=True if payload.get("namespace") else None)
    return resource if registry.webhooks.has_handlers(resource) else None


def _get_memo(
    operation: str | None,
    raw_body: Mapping[str, Any],
    *,
    memories: MemoriesLike | None,
    memobase: ephemera.AnyMemo,
) -> ephemera.AnyMemo:
    """
    The memo of the object: the object's own one if the operator knows it, a throwaway one otherwise.

    Creation requests come before the objects exist (and maybe never will): their memos are
    discarded right after the admission, so that no memory is kept for the failed attempts.
    The memories are never created here: the reactor creates them on the first sight of the objects
    (with the knowledge whether they existed before the operator's start, which is unknown here).
    """
    if memories is not None and operation != "CREATE" and raw_body in memories:
        return memories.recall(raw_body, memo=memobase).memo
    return ephemera.fork_memo(memobase) if memobase is not None else ephemera.Memo()


def _respond(
    review: reviews.Request,
    *,
    allowed: bool,
    code: int | None = None,
    message: str | None = None,
    reason: str | None = None,
    details: reviews.StatusDetails | None = None,
    warnings: Iterable[str] = (),
    json_patch: patches.JSONPatch | None = None,
) -> reviews.Response:
    response: reviews.ResponsePayload = {"uid": review["request"]["uid"], "allowed": allowed}
    warnings = [str(warning) for warning in warnings]
    if warnings:
        response["warnings"] = warnings
    if not allowed:
        status: reviews.ResponseStatus = {"code": code if code is not None else 500}
        if message:
            status["message"] = message
        if reason:
            status["reason"] = reason
        if details is not None:
            status["details"] = details
        response["status"] = status
    if allowed and json_patch:
        response["patch"] = base64.b64encode(json.dumps(json_patch).encode("utf-8")).decode("ascii")
        response["patchType"] = "JSONPatch"
    api_version = review.get("apiVersion") or reviews.REVIEW_API_VERSIONS[0]
    return {"apiVersion": api_version, "kind": reviews.REVIEW_KIND, "response": response}


def make_webhook_fn(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    insights: InsightsLike | None = None,
    resources: Collection[Resource] | None = None,
    memories: MemoriesLike | None = None,
    memobase: ephemera.AnyMemo = None,
    indices: Mapping[str, Any] | None = None,
) -> reviews.WebhookFn:
    """The framework's callback for the webhook servers/tunnels (:class:`kopf.WebhookFn`)."""

    async def fn(
        request: reviews.Request,
        *,
        webhook: str | None = None,
        headers: reviews.Headers | None = None,
        sslpeer: reviews.SSLPeer | None = None,
    ) -> reviews.Response:
        return await serve_admission_request(
            request,
            webhook=webhook,
            headers=headers,
            sslpeer=sslpeer,
            registry=registry,
            settings=settings,
            insights=insights,
            resources=resources,
            memories=memories,
            memobase=memobase,
            indices=indices,
        )

    return fn


def in_process_handler(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    webhook: str | None = None,
    headers: reviews.Headers | None = None,
    insights: InsightsLike | None = None,
    resources: Collection[Resource] | None = None,
    memories: MemoriesLike | None = None,
    memobase: ephemera.AnyMemo = None,
    indices: Mapping[str, Any] | None = None,
) -> ReviewHandler:
    """
    A coroutine function that serves one webhook's reviews with no server: review in, review out.

    Usable wherever a simulated apiserver can call the webhooks in-process (registered for the URL
    of that webhook). The apiserver does not tell the URL it calls, so the webhook id is bound here;
    see :func:`in_process_endpoints` to get them all for the URLs of the managed configurations.
    """

    fn = make_webhook_fn(
        registry=registry,
        settings=settings,
        insights=insights,
        resources=resources,
        memories=memories,
        memobase=memobase,
        indices=indices,
    )

    async def handle(review: Mapping[str, Any]) -> reviews.Response:
        return await fn(cast(reviews.Request, review), webhook=webhook, headers=headers, sslpeer=None)

    return handle


def in_process_endpoints(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    client_config: reviews.WebhookClientConfig,
    insights: InsightsLike | None = None,
    resources: Collection[Resource] | None = None,
    memories: MemoriesLike | None = None,
    memobase: ephemera.AnyMemo = None,
    indices: Mapping[str, Any] | None = None,
) -> dict[str, ReviewHandler]:
    """
    The in-process handlers of all admission handlers by their URLs as in the managed configurations.

    For a service-based client config, the keys are ``service:<namespace>/<name>:<port><path>``.
    """
    endpoints: dict[str, ReviewHandler] = {}
    for handler in registry.webhooks.get_all_handlers():
        config = inject_handler_id(client_config, handler.id)
        service = config.get("service")
        if config.get("url"):
            key = str(config["url"])
        elif service:
            port = service.get("port") or 443
            key = f"service:{service.get('namespace')}/{service.get('name')}:{port}{service.get('path') or '/'}"
        else:
            raise ValueError(f"The client config has neither a URL nor a service: {client_config!r}")
        endpoints[key] = in_process_handler(
            registry=registry,
            settings=settings,
            webhook=handler.id,
            insights=insights,
            resources=resources,
            memories=memories,
            memobase=memobase,
            indices=indices,
        )
    return endpoints


# -------------------------------------------------------------------------------------------------
# The webhook configurations.
# -------------------------------------------------------------------------------------------------


def inject_handler_id(config: reviews.WebhookClientConfig, id: str) -> reviews.WebhookClientConfig:
    """Add the handler id as the last path component of the URL or of the service's path."""
    quoted = urllib.parse.quote(id, safe="")
    result: reviews.WebhookClientConfig = {}
    if config.get("caBundle"):
        result["caBundle"] = config["caBundle"]
    url = config.get("url")
    if url:
        parts = urllib.parse.urlsplit(url)
        path = f"{parts.path.rstrip('/')}/{quoted}"
        result["url"] = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    service = config.get("service")
    if service:
        new_service: reviews.WebhookClientConfigService = {key: val for key, val in service.items() if val is not None}  # type: ignore[assignment]
        new_service["path"] = f"{(service.get('path') or '').rstrip('/')}/{quoted}"
        result["service"] = new_service
    return result


_INVALID_NAME_CHARS = re.compile(r"[^a-z0-9.-]+")


def build_webhook_name(id: str, name_suffix: str, *, disambiguate: bool = False) -> str:
    """
    A DNS-compatible name of a webhook: ``<handler-id>.<managed-name>`` (lowercased, sanitised).

    E.g. ``check_numbers`` becomes ``check-numbers.auto.kopf.dev``. If two ids are sanitised
    into the same name (e.g. ``a_b`` & ``a-b``), the latter is disambiguated with a hash of the id.
    """
    prefix = _INVALID_NAME_CHARS.sub("-", id.lower()).strip(".-") or "webhook"
    if disambiguate:
        prefix = f"{prefix}-{hashlib.sha256(id.encode('utf-8')).hexdigest()[:8]}"
    return f"{prefix}.{name_suffix}"


def build_object_selector(labels: filters.MetaFilter | None) -> dict[str, Any] | None:
    """The server-side part of the labels filter: exact values, presence & absence (not callbacks)."""
    match_labels: dict[str, str] = {}
    match_expressions: list[dict[str, Any]] = []
    for key, criterion in (labels or {}).items():
        if criterion is filters.PRESENT:
            match_expressions.append({"key": key, "operator": "Exists"})
        elif criterion is filters.ABSENT:
            match_expressions.append({"key": key, "operator": "DoesNotExist"})
        elif isinstance(criterion, str):
            match_labels[key] = criterion
        # callbacks are evaluated when the reviews arrive.
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if match_expressions:
        selector["matchExpressions"] = match_expressions
    return selector or None


def _build_rules(handler: handlers_.WebhookHandler, resources: Iterable[Resource]) -> list[dict[str, Any]]:
    operations = sorted(handler.operations) if handler.operations is not None else ["*"]
    rules: list[dict[str, Any]] = []
    for resource in sorted(resources, key=lambda r: (r.group, r.version, r.plural)):
        if handler.selector is not None and not handler.selector.check_resource(resource):
            continue
        if handler.subresource is None:
            names = [resource.plural]
        elif handler.subresource == "*":
            names = [resource.plural, f"{resource.plural}/*"]
        else:
            names = [f"{resource.plural}/{handler.subresource}"]
        rules.append(
            {
                "apiGroups": [resource.group],
                "apiVersions": [resource.version],
                "resources": names,
                "operations": list(operations),
                "scope": "*",
            }
        )
    return rules


def build_webhooks(
    handlers: Iterable[handlers_.WebhookHandler],
    resources: Iterable[Resource],
    *,
    name_suffix: str,
    client_config: reviews.WebhookClientConfig,
    persistent_only: bool = False,
) -> list[dict[str, Any]]:
    """
    The ``.webhooks`` of a validating/mutating webhook configuration: one webhook per handler id.

    Only the handlers with at least one served resource get a webhook (a webhook with no rules
    is useless). ``persistent_only`` keeps only the persistent handlers (as it is left on exit).
    """
    resources = list(resources)
    webhooks: dict[str, dict[str, Any]] = {}
    ids: dict[str, str] = {}  # webhook names to handler ids
    for handler in handlers:
        if persistent_only and not handler.persistent:
            continue
        rules = _build_rules(handler, resources)
        if not rules:
            continue
        name = build_webhook_name(handler.id, name_suffix)
        if ids.get(name, handler.id) != handler.id:
            name = build_webhook_name(handler.id, name_suffix, disambiguate=True)
        ids[name] = handler.id
        if name in webhooks:  # the same handler via several decorators: merge the rules.
            existing_rules = webhooks[name]["rules"]
            existing_rules.extend(rule for rule in rules if rule not in existing_rules)
            continue
        webhook: dict[str, Any] = {
            "name": name,
            "clientConfig": inject_handler_id(client_config, handler.id),
            "rules": rules,
            "sideEffects": "NoneOnDryRun" if handler.side_effects else "None",
            "failurePolicy": "Ignore" if handler.ignore_failures else "Fail",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": DEFAULT_TIMEOUT_SECONDS,
            "admissionReviewVersions": ["v1", "v1beta1"],
        }
        selector = build_object_selector(handler.labels)
        if selector is not None:
            webhook["objectSelector"] = selector
        webhooks[name] = webhook
    return list(webhooks.values())


async def _apply_configuration(
    *,
    type: WebhookType,
    name: str,
    webhooks: list[dict[str, Any]],
    settings: OperatorSettings,
    vault: Vault | None,
    create: bool,
    remove_if_empty: bool = False,
) -> None:
    """Overwrite the webhooks of a managed configuration; create it if absent (and if allowed).

    On exit (``remove_if_empty``), a configuration left with no webhooks is deleted altogether.
    """
    resource = CONFIGURATION_RESOURCES[type]
    if remove_if_empty and not webhooks:
        await deleting.delete_obj(
            resource=resource, namespace=None, name=name, settings=settings, logger=logger, vault=vault
        )
        return
    patch = {"webhooks": webhooks}
    patched = await patching.patch_obj(
        resource=resource, namespace=None, name=name, patch=patch, settings=settings, logger=logger, vault=vault
    )
    if patched is not None or not create:
        return
    body = {"metadata": {"name": name, "labels": {MANAGED_LABEL: "kopf"}}, "webhooks": webhooks}
    try:
        await creating.create_obj(resource=resource, body=body, settings=settings, logger=logger, vault=vault)
    except clients_errors.APIConflictError:  # created by someone meanwhile: overwrite theirs.
        await patching.patch_obj(
            resource=resource, namespace=None, name=name, patch=patch, settings=settings, logger=logger, vault=vault
        )


async def configure_webhooks(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    resources: Collection[Resource],
    client_config: reviews.WebhookClientConfig,
    vault: Vault | None = None,
    persistent_only: bool = False,
) -> None:
    """Put the current webhooks into the managed configurations (if ``settings.admission.managed``)."""
    name = settings.admission.managed
    if not name:
        return
    if persistent_only:
        logger.info(f"Cleaning up the admission webhook {name}.")  # as the published framework words it
    for type, resource in CONFIGURATION_RESOURCES.items():
        handlers = [h for h in registry.webhooks.get_all_handlers() if h.type == type]
        webhooks = build_webhooks(
            handlers, resources, name_suffix=name, client_config=client_config, persistent_only=persistent_only
        )
        # No handlers of this type: do not create the configuration, but clean an existing one.
        if not persistent_only and webhooks:
            logger.info(f"Reconfiguring the {type.value} webhook {name}.")  # as the published framework words it
        await _apply_configuration(
            type=type,
            name=name,
            webhooks=webhooks,
            settings=settings,
            vault=vault,
            create=bool(webhooks),
            remove_if_empty=persistent_only,
        )
        logger.debug(f"The {resource.kind} {name!r} is configured with {len(webhooks)} webhook(s).")


async def configuration_manager(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    client_configs: AsyncIterator[reviews.WebhookClientConfig],
    insights: InsightsLike | None = None,
    resources: Collection[Resource] | None = None,
    vault: Vault | None = None,
) -> None:
    """
    Keep the managed webhook configurations in line with the client configs & the served resources.

    Every new client config (e.g. a new URL of a tunnel) re-configures all the webhooks; so does
    every change of the served resources (if the insights are given). On exit (e.g. cancellation
    of a graceful stop), the non-persistent webhooks are removed from the configurations.
    Without ``settings.admission.managed``, the client configs are consumed and nothing is done.
    """
    latest: reviews.WebhookClientConfig | None = None
    configured: reviews.WebhookClientConfig | None = None
    changed = asyncio.Event()

    def current_resources() -> Collection[Resource]:
        found = list(resources or ())
        if insights is not None:
            found.extend(resource for resource in insights.resources if resource not in found)
        return found

    async def follow_configs() -> None:
        nonlocal latest
        async for config in client_configs:
            latest = config
            changed.set()

    async def follow_insights() -> None:
        if insights is None:
            return
        await insights.ready_resources.wait()
        changed.set()
        revision = insights.revision
        while True:
            revision = await insights.wait_for_revision(revision)
            changed.set()

    followers = [
        asyncio.create_task(follow_configs(), name="admission client configs"),
        asyncio.create_task(follow_insights(), name="admission resources"),
    ]
    try:
        while True:
            waiter = asyncio.create_task(changed.wait())
            try:
                await asyncio.wait([waiter, followers[0]], return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
            if followers[0].done() and not changed.is_set():
                followers[0].result()  # re-raise the server's errors, if any.
                logger.warning("The webhook server/tunnel has stopped yielding the client configs.")
                return
            changed.clear()
            if latest is None or (insights is not None and not insights.ready_resources.is_set()):
                continue
            if settings.admission.managed:
                await configure_webhooks(
                    registry=registry,
                    settings=settings,
                    resources=current_resources(),
                    client_config=latest,
                    vault=vault,
                )
                configured = latest
    finally:
        # Remove the webhooks while the server still serves: the apiservers can call it meanwhile.
        try:
            if configured is not None and settings.admission.managed:
                await _cleanup(
                    registry=registry,
                    settings=settings,
                    resources=current_resources(),
                    client_config=configured,
                    vault=vault,
                )
        finally:
            for follower in followers:
                follower.cancel()
            await asyncio.gather(*followers, return_exceptions=True)


async def _cleanup(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    resources: Collection[Resource],
    client_config: reviews.WebhookClientConfig,
    vault: Vault | None,
) -> None:
    """Remove the non-persistent webhooks; unless the exit is forced (then, they stay as they are)."""
    try:
        await configure_webhooks(
            registry=registry,
            settings=settings,
            resources=resources,
            client_config=client_config,
            vault=vault,
            persistent_only=True,
        )
    except asyncio.CancelledError:
        logger.warning("The removal of the non-persistent webhooks is interrupted; they may remain.")
        raise
    except Exception as e:  # API errors, connection errors, timeouts: only report them.
        logger.error(f"The non-persistent webhooks cannot be removed; they may remain: {e!r}")
    else:
        logger.debug("The non-persistent webhooks are removed from the managed configurations.")


# -------------------------------------------------------------------------------------------------
# The webhook server/tunnel.
# -------------------------------------------------------------------------------------------------

NO_SERVER_MESSAGE = (
    "Admission handlers exist, but no webhook server/tunnel is configured. "
    "Set one in a startup handler, e.g.: settings.admission.server = kopf.WebhookServer() "
    "(or kopf.WebhookAutoServer(), kopf.WebhookAutoTunnel(), kopf.WebhookK3dServer(), etc.), "
    "and optionally settings.admission.managed = 'auto.kopf.dev' to let the operator "
    "manage the validating/mutating webhook configurations in the cluster."
)


def check_server(*, registry: registries.OperatorRegistry, settings: OperatorSettings) -> None:
    """Fail with an explanation if there are admission handlers but nothing to receive the reviews."""
    if registry.webhooks.get_all_handlers() and settings.admission.server is None:
        raise WebhookServerNotConfiguredError(NO_SERVER_MESSAGE)


async def admission_webhook_server(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    insights: InsightsLike | None = None,
    resources: Collection[Resource] | None = None,
    memories: MemoriesLike | None = None,
    memobase: ephemera.AnyMemo = None,
    indices: Mapping[str, Any] | None = None,
    vault: Vault | None = None,
) -> None:
    """
    Run the configured webhook server/tunnel and manage the webhook configurations by its client configs.

    Runs until cancelled (a graceful stop removes the non-persistent webhooks), or until the server
    exits by itself (then, the operator stops too). Without admission handlers, it only waits.
    """
    if not registry.webhooks.get_all_handlers():
        await asyncio.Event().wait()
        return
    check_server(registry=registry, settings=settings)
    server: Any = settings.admission.server
    fn = make_webhook_fn(
        registry=registry,
        settings=settings,
        insights=insights,
        resources=resources,
        memories=memories,
        memobase=memobase,
        indices=indices,
    )

    async with contextlib.AsyncExitStack() as stack:
        if hasattr(server, "__aenter__") and hasattr(server, "__aexit__"):
            server = await stack.enter_async_context(server)
        configs: AsyncIterator[reviews.WebhookClientConfig] = server(fn)
        if hasattr(configs, "aclose"):
            stack.push_async_callback(configs.aclose)
        await configuration_manager(
            registry=registry,
            settings=settings,
            client_configs=configs,
            insights=insights,
            resources=resources,
            vault=vault,
        )
