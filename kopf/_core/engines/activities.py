"""
The operator-level activities: startup, cleanup, authentication (login), probing.

The activity handlers have no object to keep their progress in: their states are kept
in memory for the duration of one activity run. The handlers are retried as the resource
handlers are (errors modes, timeouts, retries, back-offs), until all of them are finished.
If any of them fails permanently, the activity fails with :class:`ActivityError`
(after all the other handlers are finished too).

The authentication is an activity that runs when the vault is empty: initially,
and whenever the credentials are depleted (expired or rejected by the API).
The login handlers declared by the operator are used; if none are declared,
the fallback ones (the piggybacked client libraries or the rudimentary login).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kopf._cogs.aiokits.clock import utcnow
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError, Vault
from kopf._cogs.structs.ephemera import AnyMemo
from kopf._core.actions import execution, invocation, lifecycles
from kopf._core.intents import registries
from kopf._core.intents.causes import Activity
from kopf._core.intents.handlers import ActivityHandler
from kopf._core.intents.logins import fallbacks

logger = logging.getLogger(__name__)


class ActivityError(Exception):
    """An activity (e.g. the startup) has failed: some of its handlers have failed permanently."""

    def __init__(self, msg: str, *, outcomes: Mapping[str, execution.HandlerOutcome]) -> None:
        super().__init__(msg)
        self.outcomes = outcomes


async def run_activity(
    *,
    lifecycle: lifecycles.LifeCycleFn | None = None,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    activity: Activity,
    handlers: Sequence[ActivityHandler] | None = None,
    indices: Mapping[str, Any] | None = None,
    memo: AnyMemo = None,
) -> dict[str, Any]:
    """
    Run all the handlers of the activity until they are finished; return their results by their ids.

    Raise :class:`ActivityError` if some handlers have failed (once all handlers are finished).
    """
    real_handlers = list(handlers) if handlers is not None else registry.activities.get_handlers(activity)
    if not real_handlers:
        return {}
    activity_logger = logging.getLogger(f"kopf.activities.{activity.value}")
    cause = invocation.ActivityCause(
        logger=activity_logger, memo=memo, indices=dict(indices or {}), activity=activity.value, settings=settings
    )
    now = utcnow()
    state = execution.State(
        {handler.id: execution.HandlerState.from_scratch(purpose=activity.value, now=now) for handler in real_handlers},
        purpose=activity.value,
    )
    outcomes: dict[str, execution.HandlerOutcome] = {}
    while True:
        new_outcomes = await execution.run_handlers(
            handlers=real_handlers, state=state, cause=cause, settings=settings, lifecycle=lifecycle
        )
        outcomes.update(new_outcomes)
        now = utcnow()
        state = state.with_outcomes(new_outcomes, now=now)
        if state.done:
            break
        delay = state.delay(now)
        if delay is not None and delay > 0:
            await asyncio.sleep(delay)
        elif not new_outcomes:
            await asyncio.sleep(0)  # nothing was due, yet nothing is delayed: let the time move.

    failed = [handler_id for handler_id, outcome in outcomes.items() if outcome.exception is not None]
    if failed:
        errors = "; ".join(f"{handler_id}: {outcomes[handler_id].exception}" for handler_id in failed)
        raise ActivityError(f"One or more {activity.value} handlers have failed: {errors}", outcomes=outcomes)
    return {handler_id: outcome.result for handler_id, outcome in outcomes.items()}


async def authenticate(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    indices: Mapping[str, Any] | None = None,
    memo: AnyMemo = None,
) -> None:
    """Run the login handlers (declared or fallback) once and put their results into the vault."""
    handlers: Sequence[ActivityHandler] = registry.activities.get_handlers(Activity.AUTHENTICATION)
    if not handlers:
        handlers = fallbacks.get_fallback_login_handlers()
    try:
        results = await run_activity(
            registry=registry,
            settings=settings,
            activity=Activity.AUTHENTICATION,
            handlers=handlers,
            indices=indices,
            memo=memo,
        )
    except ActivityError as e:
        succeeded = {
            handler_id: outcome.result for handler_id, outcome in e.outcomes.items() if outcome.exception is None
        }
        await vault.populate(_only_credentials(succeeded))
        if vault.is_empty():
            raise LoginError(f"Ran out of valid credentials: {e}") from e
        return
    await vault.populate(_only_credentials(results))
    if vault.is_empty():
        raise LoginError(
            "Ran out of valid credentials. Consider installing an API client library or adding a login handler."
        )


def _only_credentials(results: Mapping[str, Any]) -> dict[str, ConnectionInfo | None]:
    credentials: dict[str, ConnectionInfo | None] = {}
    for handler_id, result in results.items():
        if result is None or isinstance(result, ConnectionInfo):
            credentials[handler_id] = result
        else:
            logger.warning(
                f"Login handler {handler_id!r} returned {type(result).__name__}, not a ConnectionInfo; ignoring it."
            )
    return credentials


async def authenticator(
    *,
    registry: registries.OperatorRegistry,
    settings: OperatorSettings,
    vault: Vault,
    indices: Mapping[str, Any] | None = None,
    memo: AnyMemo = None,
) -> None:
    """Keep the vault populated: log in initially and every time the vault runs out of credentials."""
    first = True
    while True:
        await vault.wait_for_emptiness()
        logger.info("Initial authentication has been initiated." if first else "Re-authentication has been initiated.")
        await authenticate(registry=registry, settings=settings, vault=vault, indices=indices, memo=memo)
        logger.info("Initial authentication has finished." if first else "Re-authentication has finished.")
        first = False
        await asyncio.sleep(0)  # let the consumers pick up the new credentials before re-checking.
