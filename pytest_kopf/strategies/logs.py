"""Hypothesis strategies over recorded watch-event logs: the same incident, as a flakier cluster would tell it.

A watcher of a real cluster may miss events (a dropped connection, a relist that saw only the
latest state), see one twice (a resumed watch), or see it late. :func:`mutated_logs` draws
variants of a log with such mutations; each keeps the order of every object's own events (the
order of its resourceVersions), as any real watch does, and shrinks towards fewer mutations.
The four mutations are also plain functions, for a test that wants one particular variant.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from hypothesis import strategies as st

from kopf_sim.recording.replaying import CHANGES, LogEvent, WatchLog, read_log

__all__ = ["MUTATIONS", "coalesce_event", "delay_event", "drop_event", "duplicate_event", "mutated_logs"]

MUTATIONS = ("drop", "duplicate", "delay", "coalesce")


def drop_event(log: WatchLog, index: int) -> WatchLog:
    """The log without its ``index``-th event (a watcher that missed it)."""
    events = list(log.events)
    del events[index]
    return log.with_events(events)


def duplicate_event(log: WatchLog, index: int) -> WatchLog:
    """The log with its ``index``-th event twice in a row (a watch resumed from an older version)."""
    events = list(log.events)
    events.insert(index + 1, events[index])
    return log.with_events(events)


def delay_event(log: WatchLog, index: int, seconds: float) -> WatchLog:
    """The log with its ``index``-th event later by up to ``seconds``: never after the object's next event."""
    events = list(log.events)
    event = events[index]
    following = _next_of_same_object(events, index)
    latest = events[following].t if following is not None else event.t + seconds
    events[index] = dataclasses.replace(event, t=min(event.t + max(seconds, 0.0), latest))
    return log.with_events(sorted(events, key=lambda e: e.t))  # stable: equal times keep their order


def coalesce_event(log: WatchLog, index: int) -> WatchLog:
    """The log with its ``index``-th event merged into the object's next one (only the latest state is seen,
    as after a relist): an object added and deleted in between is never seen at all."""
    events = list(log.events)
    following = _next_of_same_object(events, index)
    if following is None:
        return log
    first, second = events[index], events[following]
    if first.type == "ADDED" and second.type == "DELETED":
        del events[following]
    else:
        merged_type = {("ADDED", "MODIFIED"): "ADDED", ("DELETED", "ADDED"): "MODIFIED"}.get(
            (first.type, second.type), second.type
        )
        events[following] = dataclasses.replace(second, type=merged_type)
    del events[index]
    return log.with_events(events)


def _next_of_same_object(events: Sequence[LogEvent], index: int) -> int | None:
    identity = events[index].identity
    for later in range(index + 1, len(events)):
        if events[later].type in CHANGES and events[later].identity == identity:
            return later
    return None


@st.composite
def mutated_logs(
    draw: st.DrawFn,
    log: WatchLog | str | os.PathLike[str],
    *,
    mutations: Sequence[str] = MUTATIONS,
    max_mutations: int = 3,
    max_delay: float = 10.0,
) -> WatchLog:
    """Variants of a log (a :class:`~kopf_sim.recording.replaying.WatchLog` or a path) with up to ``max_mutations``
    of the ``mutations`` (``drop``, ``duplicate``, ``delay`` by up to ``max_delay`` seconds, ``coalesce``),
    applied to its change events; replay one with ``kopf_cluster.replay(variant)``."""
    unknown = set(mutations) - set(MUTATIONS)
    if unknown or not mutations:
        raise ValueError(f"Unknown mutations {sorted(unknown)}; choose from {MUTATIONS}.")
    variant = log if isinstance(log, WatchLog) else read_log(log)
    for _ in range(draw(st.integers(min_value=0, max_value=max_mutations))):
        changes = [index for index, event in enumerate(variant.events) if event.type in CHANGES]
        if not changes:
            break
        mutation = draw(st.sampled_from(list(mutations)))
        index = draw(st.sampled_from(changes))
        if mutation == "drop":
            variant = drop_event(variant, index)
        elif mutation == "duplicate":
            variant = duplicate_event(variant, index)
        elif mutation == "delay":
            variant = delay_event(variant, index, draw(st.floats(min_value=0.0, max_value=max_delay)))
        else:
            variant = coalesce_event(variant, index)
    return variant
