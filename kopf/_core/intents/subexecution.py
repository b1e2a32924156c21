"""
The sub-handlers of the change-detecting handlers, as the execution layer needs them.

The execution layer (``kopf._core.actions``) is below the registries, so it does not know
them: it accepts the hooks of :class:`kopf._core.actions.execution.Subhandling`, which are
implemented here: a fresh per-handler registry in the context variables of
``@kopf.subhandler``/``kopf.register()`` around each handler call, the handlers made of
plain functions for ``kopf.execute(fns=...)``, and the filters of the sub-handlers.

The reactor passes :data:`SUBHANDLING` to the execution of the change-detecting handlers.
"""

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from kopf._cogs.structs import ids
from kopf._core.actions import execution, invocation
from kopf._core.actions.errors import DEFAULT_RETRY_DELAY, ErrorsMode
from kopf._core.intents import registries, subhandlers
from kopf._core.intents.causes import Reason
from kopf._core.intents.handlers import BaseHandler, ChangingHandler


class ChangingSubhandling:
    """The sub-handlers of the change-detecting handlers (in their own registries, filtered)."""

    @contextlib.contextmanager
    def activate(self, handler: execution.Handler) -> Iterator[Callable[[], Sequence[execution.Handler]]]:
        registry = registries.ChangingRegistry()
        registry_token = subhandlers.subregistry_var.set(registry)
        handler_token = subhandlers.handler_var.set(cast(BaseHandler, handler))
        try:
            yield registry.get_all_handlers
        finally:
            subhandlers.handler_var.reset(handler_token)
            subhandlers.subregistry_var.reset(registry_token)

    def from_fns(
        self,
        fns: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]],
        *,
        prefix: ids.HandlerId | None,
    ) -> Sequence[execution.Handler]:
        pairs: Iterable[tuple[str | None, Callable[..., Any]]]
        if isinstance(fns, Mapping):
            pairs = fns.items()
        elif isinstance(fns, Iterable):
            pairs = ((None, fn) for fn in fns)
        else:
            raise TypeError(f"fns= must be a mapping of ids to functions, or an iterable of functions; got {fns!r}")
        registry = registries.ChangingRegistry()
        for id, fn in pairs:
            registry.append(
                ChangingHandler(
                    fn=fn,
                    id=ids.build_handler_id(fn, id=id, prefix=prefix),
                    param=None,
                    errors=ErrorsMode.TEMPORARY,
                    timeout=None,
                    retries=None,
                    backoff=DEFAULT_RETRY_DELAY,
                    selector=None,
                    labels=None,
                    annotations=None,
                    when=None,
                    field=None,
                    value=None,
                    reason=None,
                )
            )
        return registry.get_all_handlers()

    def from_registry(self, registry: Any) -> Sequence[execution.Handler]:
        if isinstance(registry, registries.OperatorRegistry):
            return registry.changing.get_all_handlers()
        if isinstance(registry, registries.GenericRegistry):
            return cast(Sequence[execution.Handler], registry.get_all_handlers())
        raise TypeError(f"registry= must be a registry of handlers; got {registry!r}")

    def select(
        self,
        handlers: Sequence[execution.Handler],
        *,
        cause: invocation.ChangingCause,
    ) -> Sequence[execution.Handler]:
        """The handlers that match the cause (the non-change-detecting ones are taken as is)."""
        changing = [handler for handler in handlers if isinstance(handler, ChangingHandler)]
        registry = registries.ChangingRegistry()
        for handler in changing:
            registry.append(handler)
        reason = Reason(cause.reason) if cause.reason in Reason.__members__.values() else None
        matching = registry.get_handlers(
            cause.resource, body=cause.body, old=cause.old, new=cause.new, kwargs=cause.kwargs(), reason=reason
        )
        return [handler for handler in handlers if not isinstance(handler, ChangingHandler) or handler in matching]


#: The hooks to pass to the execution of the change-detecting handlers.
SUBHANDLING = ChangingSubhandling()
