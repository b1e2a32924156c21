"""The exceptions of the plugin: API errors as the apiserver reports them, and the plugin's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "KopfApiError",
    "KopfClusterUnreachable",
    "KopfConfigError",
    "KopfError",
    "KopfLeakError",
    "KopfModeError",
    "KopfOperatorError",
    "KopfResourceError",
    "KopfTimeoutError",
    "OperatorCheckFailed",
    "SyncClientInLoopError",
    "SyncClientInLoopWarning",
]


class KopfError(Exception):
    """The base of the plugin's errors."""


class KopfApiError(KopfError):
    """The apiserver refused a request: its HTTP ``code``, the Status ``reason`` and ``message``.

    An admission webhook's denial is in the ``message``, as the apiserver words it.
    ``status`` is the whole ``kind: Status`` object (or None if the answer was not one).
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        status: Mapping[str, Any] | None = None,
        method: str = "",
        url: str = "",
    ) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.status = dict(status) if status is not None else None
        self.method = method
        self.url = url
        where = f" ({method} {url})" if method else ""
        super().__init__(f"{code} {reason}: {message}{where}")

    @property
    def details(self) -> dict[str, Any]:
        details = (self.status or {}).get("details")
        return dict(details) if isinstance(details, Mapping) else {}


class KopfResourceError(KopfError, LookupError):
    """A resource name or kind that the cluster does not serve (per its discovery)."""


class KopfTimeoutError(KopfError, TimeoutError):
    """A condition did not come true in time; ``last`` is the last state seen (None: absent)."""

    def __init__(self, message: str, *, last: Mapping[str, Any] | None = None, seen: bool = True) -> None:
        super().__init__(message)
        self.last = last
        self.seen = seen


class KopfModeError(KopfError):
    """A feature used where it cannot work: sim-only in real mode, virtual-time-only in real time, etc."""


class KopfConfigError(KopfError):
    """The kubeconfig (or the plugin's options) cannot be used as they are."""


class KopfClusterUnreachable(KopfError):
    """The Kubernetes API of the kubeconfig context does not answer."""


class KopfOperatorError(KopfError):
    """The operator under test cannot be loaded, started, or restarted (the cause is chained)."""


class KopfLeakError(KopfError):
    """The operator has left tasks or threads behind after it has stopped (or has not stopped at all)."""


class OperatorCheckFailed(KopfError, AssertionError):
    """A check of :mod:`pytest_kopf.checks` has found the operator misbehaving.

    ``check``: the check's name (e.g. ``"crash-restart"``); ``steps``: the (shrunk) actions that led there;
    ``trace_tail``: the last lines of the run's trace (API requests, watch events, handler calls, faults);
    ``reproduction``: the text of a pytest test that replays the steps with the plugin's fixtures and
    fails the same way (save it as ``test_*.py``); ``details``: what exactly differs or is stuck;
    ``compared``: what the end state was compared with, if the failure is such a difference (None: a judge's).
    ``report``: the path of the failure's HTML report (a timeline of the worlds), once written; ``evidence``:
    what that report is made of (:class:`pytest_kopf._report.failures.FailureEvidence`), if the run kept it.
    """

    def __init__(
        self,
        check: str,
        details: str,
        *,
        steps: Sequence[Any] = (),
        trace_tail: Sequence[str] = (),
        reproduction: str = "",
        compared: str | None = None,
        evidence: Any = None,
        report: str | None = None,
    ) -> None:
        self.check = check
        self.details = details
        self.compared = compared
        #: What :func:`~pytest_kopf.checks.check_operator` had run until then (a ``CheckReport``), if it raised it.
        self.checked: Any = None
        self.steps = list(steps)
        self.trace_tail = list(trace_tail)
        self.reproduction = reproduction
        self.evidence = evidence
        self.report = report
        super().__init__(self._message())

    def _message(self) -> str:
        lines = [f"The check {self.check!r} has failed: {self.details}"]
        if self.report:
            lines.append(f"The report (a timeline of the run, open it in a browser): {self.report}")
        if self.steps:
            lines.append(f"After {len(self.steps)} step(s):")
            lines.extend(
                f"  {index}. {getattr(step, 'code', lambda s=step: str(s))()}"
                for index, step in enumerate(self.steps, 1)
            )
        if self.trace_tail:
            lines.append("The trace's last lines:")
            lines.extend(f"  {line}" for line in self.trace_tail)
        if self.reproduction:
            lines.append("A reproduction (save it as a test file; it fails the same way):")
            lines.append(self.reproduction)
        return "\n".join(lines)

    def with_context(
        self, *, steps: Sequence[Any], trace_tail: Sequence[str], reproduction: str, evidence: Any = None
    ) -> OperatorCheckFailed:
        """The same failure, with the steps that led to it, the trace's tail, a reproduction, and its evidence."""
        return self._replaced(
            steps=steps, trace_tail=trace_tail, reproduction=reproduction, evidence=evidence, report=None
        )

    def with_report(self, path: str) -> OperatorCheckFailed:
        """The same failure, naming its report's file."""
        return self._replaced(report=path)

    def _replaced(self, **changes: Any) -> OperatorCheckFailed:
        context = dict(
            steps=self.steps,
            trace_tail=self.trace_tail,
            reproduction=self.reproduction,
            evidence=self.evidence,
            report=self.report,
            compared=self.compared,
        )
        return OperatorCheckFailed(self.check, self.details, **(context | changes))


class SyncClientInLoopError(RuntimeError):
    """A sync HTTP client was called for a simulated cluster in the thread of the loop that serves it."""


class SyncClientInLoopWarning(UserWarning):
    """A sync client was called in an async handler (or other code in the event loop): it blocks the loop."""
