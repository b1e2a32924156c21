"""Dynamic admission control: the simulated apiserver calls mutating and validating webhooks.

On every create, update and delete (and their subresources), the webhooks of the stored
``MutatingWebhookConfiguration`` and ``ValidatingWebhookConfiguration`` objects are matched by
their rules and selectors and called with ``admission.k8s.io/v1 AdmissionReview`` requests:
mutating ones in order (their JSON patches applied one after another), validating ones after
the object was re-checked against its schema. Webhooks are reached over HTTP(S) at their URL
(the ``caBundle`` honoured), or in-process when a handler is registered for their URL or service,
which is how operators under test get their webhooks called with no sockets and no certificates.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import dataclasses
import json
import ssl
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Protocol

import aiohttp

from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, meta
from kopf_sim.kube.resources import ResourceType, StorageKey
from kopf_sim.kube.selectors import LabelSelector
from kopf_sim.timing.clock import UidFactory
from kopf_sim.writes import patching

InProcessHandler = Callable[[JsonDict], Awaitable[JsonDict]]
MUTATING = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
_EXEMPT = frozenset({MUTATING, VALIDATING})
DEFAULT_TIMEOUT = 10
USER_INFO: JsonDict = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}


#: Set while a write runs synchronously (:func:`kopf_sim.store.pipeline.run_now`): it cannot call webhooks.
synchronous_writes: contextvars.ContextVar[bool] = contextvars.ContextVar("kopf_sim_synchronous_writes", default=False)


class SynchronousWriteError(RuntimeError):
    """A write made synchronously (a loader's, a test's) would have to call a webhook, which takes awaiting."""


class StoreView(Protocol):
    """What admission reads of the store: the webhook configurations, namespaces (for selectors), and uids."""

    @property
    def uids(self) -> UidFactory: ...

    def peek(self, key: StorageKey, namespace: str | None, name: str) -> JsonDict | None: ...

    def objects(self, key: StorageKey, namespace: str | None = None) -> Iterator[JsonDict]: ...

    def count(self, key: StorageKey | None = None) -> int: ...


@dataclasses.dataclass(frozen=True)
class Attributes:
    """What is being admitted: the request as the webhooks' rules see it."""

    rtype: ResourceType
    operation: str  # CREATE, UPDATE, DELETE
    namespace: str | None
    name: str
    subresource: str | None
    dry_run: bool
    options: JsonDict
    kind: tuple[str, str, str] | None = None  # (group, version, kind) of the objects, if not the resource's


@dataclasses.dataclass(frozen=True)
class Webhook:
    configuration: str
    name: str
    mutating: bool
    spec: Mapping[str, Any]

    @property
    def failure_policy(self) -> str:
        return str(self.spec.get("failurePolicy") or "Fail")

    @property
    def timeout(self) -> float:
        return float(self.spec.get("timeoutSeconds") or DEFAULT_TIMEOUT)

    def endpoint(self) -> tuple[str, str | None]:
        """The URL to call and a lookup key for in-process handlers (``service:ns/name:port/path``)."""
        config = self.spec.get("clientConfig") or {}
        if config.get("url"):
            return str(config["url"]), None
        service = config.get("service") or {}
        port = service.get("port", 443)
        path = service.get("path") or "/"
        key = f"service:{service.get('namespace')}/{service.get('name')}:{port}{path}"
        return f"https://{service.get('name')}.{service.get('namespace')}.svc:{port}{path}", key


class AdmissionControl:
    """Finds the webhooks that apply to a request and runs them as the apiserver does."""

    def __init__(self, cluster: StoreView) -> None:
        self.cluster = cluster
        self.in_process: dict[str, InProcessHandler] = {}

    def register(self, url_or_service: str, handler: InProcessHandler) -> None:
        """Serve a webhook URL (or ``service:ns/name:port/path``) by an in-process coroutine."""
        self.in_process[url_or_service] = handler

    def unregister(self, url_or_service: str) -> None:
        self.in_process.pop(url_or_service, None)

    def _webhooks(self, mutating: bool) -> list[Webhook]:
        key = MUTATING if mutating else VALIDATING
        hooks = []
        for config in self.cluster.objects(key):
            for spec in config.get("webhooks") or ():
                hooks.append(Webhook(meta(config)["name"], str(spec.get("name", "")), mutating, spec))
        return hooks

    def has_webhooks(self) -> bool:
        return bool(self.cluster.count(MUTATING) or self.cluster.count(VALIDATING))

    # -- The two phases ----------------------------------------------------------------------------

    async def mutate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> JsonDict | None:
        """Run the matching mutating webhooks in order; each sees the previous one's result."""
        if attrs.rtype.storage_key in _EXEMPT:
            return obj
        for hook in self._webhooks(mutating=True):
            if not self._matches(hook, attrs, obj, old):
                continue
            response = await self._call(hook, attrs, obj, old)
            if response is None:
                continue
            warnings.extend(str(w) for w in response.get("warnings") or ())
            self._raise_if_denied(hook, response)
            if response.get("patch") and obj is not None:
                obj = self._apply_patch(hook, obj, response)
        return obj

    async def validate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> None:
        """Run the matching validating webhooks (in parallel, as the apiserver); the first denial wins."""
        if attrs.rtype.storage_key in _EXEMPT:
            return
        hooks = [h for h in self._webhooks(mutating=False) if self._matches(h, attrs, obj, old)]
        responses = await asyncio.gather(*(self._call(h, attrs, obj, old) for h in hooks))
        for response in responses:
            if response is not None:
                warnings.extend(str(w) for w in response.get("warnings") or ())
        for hook, response in zip(hooks, responses, strict=True):
            if response is not None:
                self._raise_if_denied(hook, response)

    # -- Matching ----------------------------------------------------------------------------------

    def _matches(self, hook: Webhook, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None) -> bool:
        if not any(_rule_matches(rule, attrs) for rule in hook.spec.get("rules") or ()):
            return False
        objects = [o for o in (obj, old) if o is not None]
        selector = LabelSelector.from_spec(hook.spec.get("objectSelector"))
        if not selector.empty and not any(selector.matches(meta(o).get("labels")) for o in objects):
            return False
        ns_selector = LabelSelector.from_spec(hook.spec.get("namespaceSelector"))
        if not ns_selector.empty:
            if attrs.rtype.storage_key == ("", "namespaces"):
                labels = meta(objects[0]).get("labels") if objects else None
            elif attrs.rtype.namespaced and attrs.namespace:
                namespace = self.cluster.peek(("", "namespaces"), None, attrs.namespace)
                labels = meta(namespace).get("labels") if namespace else None
            else:
                return True  # cluster-scoped objects are not subject to namespace selectors
            if not ns_selector.matches(labels):
                return False
        if attrs.dry_run and hook.spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise errors.bad_request(f'admission webhook "{hook.name}" does not support dry run')
        return True

    # -- Calling -----------------------------------------------------------------------------------

    def _review(self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None) -> JsonDict:
        rtype = attrs.rtype
        group, version, kind = attrs.kind or (rtype.group, rtype.version, rtype.kind)
        gvk = {"group": group, "version": version, "kind": kind}
        gvr = {"group": rtype.group, "version": rtype.version, "resource": rtype.plural}
        request: JsonDict = {
            "uid": self.cluster.uids(),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": attrs.name,
            "operation": attrs.operation,
            "userInfo": USER_INFO,
            "object": obj,
            "oldObject": old,
            "dryRun": attrs.dry_run,
            "options": attrs.options,
        }
        if attrs.subresource:
            request["subResource"] = request["requestSubResource"] = attrs.subresource
        if attrs.namespace:
            request["namespace"] = attrs.namespace
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}

    async def _call(
        self, hook: Webhook, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None
    ) -> JsonDict | None:
        """The webhook's ``response``, or None when calling it failed and the failure policy ignores that."""
        if synchronous_writes.get():
            raise SynchronousWriteError(
                f"A synchronous write of {attrs.rtype.plural} cannot call the admission webhook {hook.name!r}: "
                "write through the API instead (an HTTP client, kopf_cluster, or `await cluster.writes.…`)."
            )
        review = self._review(attrs, obj, old)
        try:
            async with asyncio.timeout(hook.timeout):
                reply = await self._send(hook, review)
            response = reply.get("response") if isinstance(reply, dict) else None
            if not isinstance(response, dict):
                raise WebhookCallError("the response is not an AdmissionReview with a response")
            if response.get("uid") != review["request"]["uid"]:
                raise WebhookCallError(
                    f"expected response.uid={review['request']['uid']!r}, got {response.get('uid')!r}"
                )
            return response
        except (WebhookCallError, aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            if hook.failure_policy == "Ignore":
                return None
            detail = str(exc) or type(exc).__name__
            if isinstance(exc, TimeoutError):
                detail = "context deadline exceeded"
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: failed calling webhook "{hook.name}": failed to call webhook: {detail}',
            ) from None

    async def _send(self, hook: Webhook, review: JsonDict) -> Any:
        url, service_key = hook.endpoint()
        handler = self.in_process.get(url) or (self.in_process.get(service_key) if service_key else None)
        if handler is not None:
            # Through JSON and back, so that in-process webhooks get exactly what the wire would carry.
            return json.loads(json.dumps(await handler(json.loads(json.dumps(review)))))
        ca_bundle = (hook.spec.get("clientConfig") or {}).get("caBundle")
        ssl_context: ssl.SSLContext | bool = True
        if url.startswith("https://"):
            ssl_context = ssl.create_default_context()
            if ca_bundle:
                ssl_context.load_verify_locations(cadata=base64.b64decode(ca_bundle).decode())
        # A session per call: webhooks are few, and nothing outlives the request (no session to close later).
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                url,
                json=review,
                ssl=ssl_context if url.startswith("https") else False,
                headers={"Accept": "application/json"},
            ) as response,
        ):
            if response.status != 200:
                raise WebhookCallError(f"the server responded with HTTP {response.status}")
            return await response.json(content_type=None)

    def _raise_if_denied(self, hook: Webhook, response: JsonDict) -> None:
        if response.get("allowed"):
            return
        result = dict(response.get("status") or {})
        denied_by = f'admission webhook "{hook.name}" denied the request'
        message = result.get("message")
        result["message"] = f"{denied_by}: {message}" if message else f"{denied_by} without explanation"
        code = int(result.get("code") or 403)
        reason = str(result.get("reason") or "")
        error = errors.ApiError(code, reason, result["message"], details=result.get("details"))
        raise error

    def _apply_patch(self, hook: Webhook, obj: JsonDict, response: JsonDict) -> JsonDict:
        if response.get("patchType", "JSONPatch") != "JSONPatch":
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: admission webhook "{hook.name}" '
                f"returned an unsupported patch type {response.get('patchType')!r}",
            )
        try:
            ops = json.loads(base64.b64decode(response["patch"]))
            patched = patching.apply_json_patch(obj, ops)
        except (ValueError, patching.PatchError) as exc:
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: admission webhook "{hook.name}" returned an invalid patch: {exc}',
            ) from None
        if not isinstance(patched, dict):
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: admission webhook "{hook.name}" '
                "returned a patch that does not produce an object",
            )
        return patched


class WebhookCallError(Exception):
    """A webhook could not be called or answered nonsense: subject to its failure policy."""


def _rule_matches(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    rtype = attrs.rtype
    operations = rule.get("operations") or ()
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and rtype.group not in groups:
        return False
    versions = rule.get("apiVersions") or ()
    if "*" not in versions and rtype.version not in versions:
        return False
    scope = rule.get("scope") or "*"
    if (scope == "Cluster" and rtype.namespaced) or (scope == "Namespaced" and not rtype.namespaced):
        return False
    wanted = f"{rtype.plural}/{attrs.subresource}" if attrs.subresource else rtype.plural
    for resource in rule.get("resources") or ():
        main, _, sub = str(resource).partition("/")
        if attrs.subresource:
            if (main in ("*", rtype.plural)) and (sub in ("*", attrs.subresource)):
                return True
        elif resource in ("*", wanted):
            return True
    return False
