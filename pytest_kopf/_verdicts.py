"""The verdict of the checks on one run whose actions are over: :func:`verify`.

The machines call it at the end of each example (and of each planned run); the reproductions call it too.
It reads the catalogue (:mod:`pytest_kopf._catalogue`): the comparisons and the judges of the chosen checks,
phase by phase, the first failure raised.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Required, TypedDict, Unpack

from ._catalogue import CATALOGUE, Check, Phase, validate_checks
from ._judges import Evidence
from ._noise import NoiseField
from ._oracles import correspondences
from ._tracing import Entry, Log, Trace
from .cluster import KopfCluster
from .driving import DEFAULT_QUIET, DEFAULT_SETTLE_TIMEOUT
from .errors import OperatorCheckFailed
from .operator import KopfOperator

__all__ = ["RunOptions", "compared", "gathered", "judged", "verify"]


class RunOptions(TypedDict, total=False):
    """What :func:`verify` (and :func:`gathered`) take besides the checks: see :func:`verify` for each."""

    resources: Required[Sequence[str]]
    expected: Sequence[Mapping[str, Any]] | None
    namespace: str
    mask: Sequence[str]
    quiet: float
    settle_timeout: float
    records: Sequence[logging.LogRecord] | None
    trace: Trace | Sequence[Entry] | None
    direct: Sequence[Mapping[str, Any]] | None
    created: Iterable[str] | None
    retained: Sequence[str]
    consistency: Mapping[str, str] | None
    noise: Iterable[NoiseField]


async def verify(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    *,
    checks: Sequence[str],
    **options: Unpack[RunOptions],
) -> list[dict[str, Any]]:
    """The checks' verdict on a run whose actions are over: its end state, or :class:`~.errors.OperatorCheckFailed`.

    ``resources`` (required): the driven resources, as ``plural.group``; the other options have the defaults of
    :func:`gathered`.

    The operator is let to settle (the faults still armed fire meanwhile: the generated ones are all
    limited in count, so they are transient); then each check compares and judges, in the catalogue's
    phases (``daemons`` & ``finalizers`` delete every object of ``resources`` and settle again).
    ``expected``: the end state of the same actions with no faults and no crashes (for the comparing
    checks). ``records``: the operator's log records (by default, the trace's, or all that
    ``kopf_operator`` has captured). ``trace``: the run's trace (:class:`~pytest_kopf._tracing.Trace`,
    e.g. of :func:`~pytest_kopf._tracing.record_trace`); ``retries`` reads its requests, and, when the trace
    has the log records too, checks that handlers retried after a :class:`kopf.TemporaryError` are not
    called before their delay is over. ``noise``: the fields that differ between two correct runs (learned by the
    machines, :func:`pytest_kopf._noise.learn`), masked in every comparison.

    The oracles': ``direct``: the end state of the driven objects created directly in their final state (for
    ``transition``); ``created``: the uids of the objects that the operator created (for ``cleanup``: see
    :func:`~pytest_kopf._oracles.record_creations`), except those matching the ``retained`` patterns;
    ``consistency``: where the driven objects' fields must be found (``{"spec.replicas":
    "deployments/{name}.spec.replicas"}``, see :class:`~pytest_kopf._oracles.Correspondence`).
    """
    chosen = [CATALOGUE[name] for name in validate_checks(checks)]
    evidence = await gathered(kopf_cluster, kopf_operator, **options)
    await judged(evidence, chosen, before=Phase.COMPARED)
    failure = compared(evidence, chosen)
    if failure is not None:
        raise failure
    await judged(evidence, chosen, after=Phase.COMPARED)
    return evidence.state


async def gathered(
    kopf_cluster: KopfCluster,
    kopf_operator: KopfOperator,
    *,
    resources: Sequence[str],
    expected: Sequence[Mapping[str, Any]] | None = None,
    namespace: str = "default",
    mask: Sequence[str] = (),
    quiet: float = DEFAULT_QUIET,
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
    records: Sequence[logging.LogRecord] | None = None,
    trace: Trace | Sequence[Entry] | None = None,
    direct: Sequence[Mapping[str, Any]] | None = None,
    created: Iterable[str] | None = None,
    retained: Sequence[str] = (),
    consistency: Mapping[str, str] | None = None,
    noise: Iterable[NoiseField] = (),
) -> Evidence:
    """What the checks judge a run by (as :func:`verify` takes it), once the run has settled."""
    entries, logs_traced = (trace.entries, trace.logs_recorded) if isinstance(trace, Trace) else (trace, False)
    if records is None:
        records = (
            [e.record for e in entries if isinstance(e, Log)] if logs_traced and entries else kopf_operator.records
        )
    evidence = Evidence(
        cluster=kopf_cluster,
        operator=kopf_operator,
        resources=[await kopf_cluster.resolve(name) for name in resources],
        namespace=namespace,
        mask=mask,
        quiet=quiet,
        settle_timeout=settle_timeout,
        records=list(records),
        trace=entries,
        logs_traced=logs_traced,
        expected=[dict(obj) for obj in expected] if expected is not None else None,
        direct=[dict(obj) for obj in direct] if direct is not None else None,
        created=set(created) if created is not None else None,
        retained=list(retained),
        correspondences=correspondences(consistency),
        noise=list(noise),
    )
    evidence.settled = await evidence.settle()
    return evidence


async def judged(
    evidence: Evidence, chosen: Sequence[Check], *, before: Phase | None = None, after: Phase | None = None
) -> None:
    """The judges of these checks, phase by phase (only those before or after a phase, if given): the first failure.

    The comparisons are not among them (:func:`compared`): they look at the end state only, so the machines can
    compare again once they know more noise (:meth:`pytest_kopf.stateful.OperatorMachine._verdict`).
    """
    for phase in Phase:
        if (
            phase is Phase.COMPARED
            or (before is not None and phase >= before)
            or (after is not None and phase <= after)
        ):
            continue
        for check in chosen:
            if check.phase is phase and check.judge is not None:
                details = await check.judge(evidence)
                if details is not None:
                    raise OperatorCheckFailed(check.name, details)


def compared(evidence: Evidence, chosen: Sequence[Check]) -> OperatorCheckFailed | None:
    """The first difference of the end state from what these checks compare it with (with the noise masked), if any."""
    for check in chosen:
        if check.compares is not None:
            details = check.compares.differs(evidence)
            if details is not None:
                return OperatorCheckFailed(check.name, details, compared=str(check.compares))
    return None
