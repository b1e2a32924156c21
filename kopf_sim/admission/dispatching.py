"""The two webhook admission plugins of the apiserver: mutating (in order, reinvoked if needed) and validating.

Mutating webhooks run one after another, in the order of their configurations' names and then as listed;
each sees what the previous ones made of the object (``reinvocationPolicy: IfNeeded`` calls a webhook once
more if a later one changed the object). Validating webhooks run concurrently on the final object; the
first refusal to arrive is the answer. A denial is the webhook's status, normalised as the apiserver does;
a failed call is an internal error unless the webhook's failure policy is ``Ignore``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Mapping

from kopf_sim.admission import calling, configurations, matching, reviews
from kopf_sim.admission.attributes import Attributes, StoreView
from kopf_sim.admission.calling import InProcessHandler
from kopf_sim.admission.configurations import Webhook
from kopf_sim.admission.matching import Invocation
from kopf_sim.admission.reviews import CallFailure, Response
from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import StorageKey
from kopf_sim.writes import patching

__all__ = [
    "MutatingWebhooks",
    "SynchronousWriteError",
    "ValidatingWebhooks",
    "WebhookCaller",
    "denial",
    "synchronous_writes",
]

_SERVICES: StorageKey = ("", "services")

#: Set while a write runs synchronously (:func:`kopf_sim.store.pipeline.run_now`): it cannot await webhooks.
synchronous_writes: contextvars.ContextVar[bool] = contextvars.ContextVar("kopf_sim_synchronous_writes", default=False)


class SynchronousWriteError(RuntimeError):
    """A write made synchronously (a loader's, a test's) would have to call a webhook, which takes awaiting."""


class WebhookCaller:
    """Calls a webhook as the apiserver does: the review in its version, the answer checked, the failure policy."""

    def __init__(self, store: StoreView, in_process: Mapping[str, InProcessHandler]) -> None:
        self.store = store
        self.in_process = in_process

    def webhooks(self, attrs: Attributes, *, mutating: bool) -> list[Webhook]:
        if attrs.rtype.storage_key in configurations.EXEMPT:
            return []
        return configurations.webhooks(self.store, mutating=mutating)

    async def call(
        self, call: Invocation, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> Response | None:
        """The webhook's answer (its warnings collected); None if the call failed and its policy ignores that."""
        hook = call.webhook
        if synchronous_writes.get():
            raise SynchronousWriteError(
                f"A synchronous write of {attrs.rtype.plural} cannot call the admission webhook {hook.name!r}: "
                "write through the API instead (an HTTP client, kopf_cluster, or `await cluster.writes.…`)."
            )
        try:
            response = await self._call(call, attrs, obj, old)
        except CallFailure as exc:
            failed(hook, exc)
            return None
        warnings.extend(response.warnings)
        return response

    async def _call(self, call: Invocation, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None) -> Response:
        hook = call.webhook
        version = reviews.negotiated_version(hook.review_versions)
        if version is None:
            raise CallFailure(
                "could not create admission objects: webhook does not accept known AdmissionReview versions"
            )
        uid = self.store.uids()
        endpoint = hook.endpoint()
        handler = self.in_process.get(endpoint.url)
        if handler is None and endpoint.service_key is not None:
            handler = self.in_process.get(endpoint.service_key)
        if handler is None and endpoint.service is not None and self.store.peek(_SERVICES, *endpoint.service) is None:
            # The apiserver resolves a service reference through the Service object before it posts anything.
            raise CallFailure(
                f'failed to call webhook: Post "{endpoint.url}?timeout={hook.timeout}s": '
                f'service "{endpoint.service[1]}" not found'
            )
        review = reviews.review(version, uid, attrs, call, obj, old)
        answer = await calling.post(endpoint, review, timeout=hook.timeout, handler=handler)
        return reviews.read_response(version, uid, answer, mutating=hook.mutating)


def failed(hook: Webhook, failure: CallFailure) -> None:
    """A failed call: an internal error, unless the webhook's failure policy ignores it (then nothing)."""
    if hook.failure_policy != "Ignore":
        raise errors.ApiError(
            500, "InternalError", f'Internal error occurred: failed calling webhook "{hook.name}": {failure}'
        ) from None


def denial(hook: Webhook, status: JsonDict | None) -> errors.ApiError:
    """A webhook's refusal as the client gets it: the webhook's status, with the apiserver's normalisation.

    The code is at least 400 (a missing one too), and the message names the webhook; details (e.g. the
    field causes of a ``422 Invalid``) pass through as they are.
    """
    result = dict(status or {})
    code = result.get("code")
    if not isinstance(code, int) or code < 400:
        code = 400
    denied_by = f'admission webhook "{hook.name}" denied the request'
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = result.get("details")
    return errors.ApiError(
        code, str(result.get("reason") or ""), message, details=details if isinstance(details, dict) else None
    )


class _Webhooks:
    """The webhooks of one kind of configurations: active while any such configuration is stored."""

    mutating: bool

    def __init__(self, caller: WebhookCaller) -> None:
        self.caller = caller
        self._configurations = configurations.MUTATING if self.mutating else configurations.VALIDATING
        self.configured_by = frozenset({self._configurations})

    def active(self) -> bool:
        return self.caller.store.count(self._configurations) > 0


class MutatingWebhooks(_Webhooks):
    """The mutating webhooks: in order, each patching what the previous ones made; some called again if needed."""

    mutating = True

    async def mutate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> JsonDict | None:
        """The object as the webhooks left it (the same object if none changed it)."""
        hooks = self.caller.webhooks(attrs, mutating=self.mutating)
        invoked: set[tuple[str, int]] = set()  # reinvocable webhooks called before the last change
        reinvoke: set[tuple[str, int]] = set()  # the webhooks to call again in the second round
        for round_ in (1, 2):
            if round_ == 2 and not reinvoke:
                break
            for hook in hooks:
                if round_ == 2 and hook.key not in reinvoke:
                    continue
                call = matching.invocation(hook, attrs, obj, old, self.caller.store)
                if call is None:
                    continue
                response = await self.caller.call(call, attrs, obj, old, warnings)
                if response is None:
                    continue
                if not response.allowed:
                    raise denial(hook, response.status)
                try:
                    patched = self._patched(call, attrs, obj, response)
                except CallFailure as exc:
                    failed(hook, exc)
                    continue
                if patched is not None and patched != obj:
                    obj = patched
                    reinvoke |= invoked  # those called before this change see it again
                    invoked = set()
                if hook.reinvocation_policy == "IfNeeded":
                    invoked.add(hook.key)
        return obj

    @staticmethod
    def _patched(call: Invocation, attrs: Attributes, obj: JsonDict | None, response: Response) -> JsonDict | None:
        """The object with the webhook's JSON patch applied (at the webhook's version, then back); None if none.

        In the apiserver's order: a patch type other than ``JSONPatch`` (a v1beta1 answer may have none) is a
        failed call, subject to the failure policy; a patch that is not JSON, that does not apply, or that is
        not empty on an operation without an object (DELETE) is an internal error whatever the policy.
        """
        hook = call.webhook
        if not response.patch:
            return None
        if response.patch_type != "JSONPatch":
            raise CallFailure(f'unsupported patch type "{response.patch_type}"')
        try:
            operations = json.loads(response.patch)
        except json.JSONDecodeError as exc:
            detail = calling.json_error(exc)
            raise errors.ApiError(500, "InternalError", f"Internal error occurred: {detail}") from None
        if operations is None or operations == []:  # Go decodes `null` and `[]` alike: no operations
            return None
        if obj is None:
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: admission webhook "{hook.name}" attempted to modify the object, '
                "which is not supported for this operation",
            )
        try:
            patched = patching.apply_json_patch(call.converted(obj, attrs), operations)
        except patching.PatchError as exc:
            raise errors.ApiError(500, "InternalError", f"Internal error occurred: {exc.message}") from None
        if not isinstance(patched, dict):
            raise errors.ApiError(500, "InternalError", "Internal error occurred: the patched object is not an object")
        if attrs.kind is None:
            patched["apiVersion"] = attrs.rtype.api_version
        return patched


class ValidatingWebhooks(_Webhooks):
    """The validating webhooks: all at once on the final object; the first refusal to arrive is the answer."""

    mutating = False

    async def validate(
        self, attrs: Attributes, obj: JsonDict | None, old: JsonDict | None, warnings: list[str]
    ) -> None:
        calls = [
            call
            for hook in self.caller.webhooks(attrs, mutating=self.mutating)
            if (call := matching.invocation(hook, attrs, obj, old, self.caller.store)) is not None
        ]
        if not calls:
            return
        refusals: list[errors.ApiError] = []  # in the order they arrive

        async def validate_one(call: Invocation) -> None:
            try:
                response = await self.caller.call(call, attrs, obj, old, warnings)
            except errors.ApiError as exc:
                refusals.append(exc)
                return
            if response is not None and not response.allowed:
                refusals.append(denial(call.webhook, response.status))

        if synchronous_writes.get():  # no tasks then: the first call raises the error of synchronous writes
            for call in calls:
                await validate_one(call)
        else:
            await asyncio.gather(*(validate_one(call) for call in calls))
        if refusals:
            raise refusals[0]
