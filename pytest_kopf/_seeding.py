"""The checks' examples depend on their settings alone, not on which other modules the process has loaded.

Hypothesis' own backend draws, now and then, constants that it finds in the source of the modules
loaded at the moment (integers, strings from local files). That is good at finding bugs in ordinary
property tests, but it makes a check's examples depend on what else the process has imported: in a
whole test session, a check missed a planted bug that it found when run alone, because one more
collected module (``kopf_sim.http.protobuf``'s tables) changed the draws. The checks promise the same
examples, verdict and trace for the same settings in any process, so they run without that pool.

The pool lives in hypothesis' internals; if a future hypothesis renames it, this degrades to nothing
(the checks still work, only less reproducibly across processes).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["without_local_constants"]

_lock = threading.Lock()


@contextlib.contextmanager
def without_local_constants() -> Iterator[None]:
    """Meanwhile, hypothesis draws only its own global constants, none from the loaded modules' source."""
    try:
        from hypothesis.internal.conjecture import providers

        original = providers._get_local_constants
        constants_type: Any = getattr(providers, "Constants")  # noqa: B009 (not re-exported for type checkers)
        cache: Any = providers.CONSTANTS_CACHE
    except (ImportError, AttributeError):  # another hypothesis: nothing to switch off
        yield
        return
    with _lock:
        empty = constants_type()
        providers._get_local_constants = lambda: empty
        cache.cache.clear()  # the per-constraint pools computed with the local constants
        try:
            yield
        finally:
            providers._get_local_constants = original
            cache.cache.clear()
