"""What the daemon tests share: spawning a daemon directly, with a patch sink and a body."""

from typing import Any

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.ephemera import Memo
from kopf._core.engines.daemons import (
    DaemonsMemory,
    spawn_daemons,
)

from ..spawning_helpers import LOGGER, RESOURCE, PatchSink, make_body

looptime = pytest.mark.looptime


async def spawn(
    handlers: list[Any],
    memory: DaemonsMemory,
    body: dict[str, Any] | None = None,
    sink: PatchSink | None = None,
    settings: OperatorSettings | None = None,
    memo: Any = None,
    indices: dict[str, Any] | None = None,
) -> None:
    await spawn_daemons(
        settings=settings or OperatorSettings(),
        handlers=handlers,
        memory=memory,
        body=body if body is not None else make_body(),
        resource=RESOURCE,
        logger=LOGGER,
        memo=memo if memo is not None else Memo(),
        indices=indices,
        patch_sink=sink,
    )
