"""What these tests share."""

from typing import Any

from kopf._cogs.configs.progress import (
    ProgressRecord,
)
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.ids import HandlerId
from kopf._cogs.structs.patches import Patch

KEY = HandlerId("create_fn")


RECORD = ProgressRecord(
    started="2020-01-01T00:00:00",
    stopped=None,
    delayed=None,
    purpose="create",
    retries=1,
    success=False,
    failure=False,
    message=None,
    subrefs=None,
)


COMPACT = {"started": "2020-01-01T00:00:00", "purpose": "create", "retries": 1, "success": False, "failure": False}


def applied(body: dict[str, Any], patch: Patch) -> Body:
    """Apply a merge-patch as the API would (simplified RFC 7386)."""

    def merge(target: Any, patch: Any) -> Any:
        if not isinstance(patch, dict):
            return patch
        result = dict(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = merge(result.get(key), value)
        return result

    return Body(merge(body, dict(patch)))
