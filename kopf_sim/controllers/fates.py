"""Pods' fates: what a test declares to become of the containers of the pods that a selector picks.

Like the stages of kwok, but declarative and in virtual time: "fail with exit code 1 after 3 s",
"never become ready", "crash-loop", "succeed after 10 s", "cannot pull the image". A fate applies
to the containers of every matching pod each time they start; set on running pods, its clock
starts when it is set. The most recently added fate that matches a pod wins.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kopf_sim.kube.selectors import LabelSelector

__all__ = ["Fate", "FateRule", "Fates"]


@dataclasses.dataclass(frozen=True)
class Fate:
    """What the containers of a pod do once they run (times in virtual seconds).

    ``exit_code=None`` means they keep running until the pod is deleted. Whether an exited container
    restarts (with the kubelet's back-off: CrashLoopBackOff) is the pod's ``restartPolicy``'s business,
    as in a real cluster. ``run_time`` is how long they run before they exit (None: the pod's default);
    ``stop_delay`` how long they take to stop when the pod is deleted (None: the cluster's default;
    never longer than the grace period).
    """

    ready: bool = True
    exit_code: int | None = None
    run_time: float | None = None
    pull_error: bool = False
    stop_delay: float | None = None

    def __post_init__(self) -> None:
        for name in ("run_time", "stop_delay"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"Fate.{name} cannot be negative, got {value!r}.")
        if self.exit_code is not None and not 0 <= self.exit_code <= 255:
            raise ValueError(f"An exit code is within 0..255, got {self.exit_code!r}.")

    @classmethod
    def run(cls, *, ready: bool = True) -> Fate:
        """Run until deleted (the default of long-running pods), ready or not."""
        return cls(ready=ready)

    @classmethod
    def never_ready(cls) -> Fate:
        """Run, but never pass the readiness probe (the pod stays Running, not Ready)."""
        return cls(ready=False)

    @classmethod
    def succeed(cls, after: float = 0.0) -> Fate:
        """Exit with code 0 this long after the start (Completed; restarted only under restartPolicy Always)."""
        return cls(exit_code=0, run_time=after)

    @classmethod
    def fail(cls, exit_code: int = 1, after: float = 0.0) -> Fate:
        """Exit with a non-zero code this long after the start (Error; restarted unless restartPolicy Never)."""
        if exit_code == 0:
            raise ValueError("A failure needs a non-zero exit code; use Fate.succeed() for code 0.")
        return cls(exit_code=exit_code, run_time=after)

    @classmethod
    def crash_loop(cls, exit_code: int = 1, after: float = 0.0) -> Fate:
        """Fail on every start: with restartPolicy Always or OnFailure, the pod goes into CrashLoopBackOff."""
        return cls.fail(exit_code=exit_code, after=after)

    @classmethod
    def image_pull_error(cls) -> Fate:
        """Never start: the image cannot be pulled (ErrImagePull, then ImagePullBackOff); the pod stays Pending."""
        return cls(pull_error=True, ready=False)


@dataclasses.dataclass(frozen=True)
class FateRule:
    """A fate for the pods that a label selector (and optionally a namespace) picks."""

    selector: LabelSelector
    fate: Fate
    namespace: str | None = None
    serial: int = 0

    def matches(self, namespace: str | None, labels: Mapping[str, str] | None) -> bool:
        if self.namespace is not None and namespace != self.namespace:
            return False
        return self.selector.matches(labels)


Selector = str | Mapping[str, Any] | LabelSelector


def as_selector(selector: Selector) -> LabelSelector:
    """A label selector from its text (``app=web,tier!=db``), a mapping of labels, or a structured one."""
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return LabelSelector.parse(selector)
    if "matchLabels" in selector or "matchExpressions" in selector:
        return LabelSelector.from_spec(selector)
    return LabelSelector.from_spec({"matchLabels": dict(selector)})


class Fates:
    """The fates in force, newest first; whoever changes them is told (the kubelets re-evaluate their pods)."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._rules: list[FateRule] = []
        self._serials = itertools.count(1)
        self._on_change = on_change

    def __iter__(self) -> Iterator[FateRule]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def add(self, selector: Selector, fate: Fate, *, namespace: str | None = None) -> FateRule:
        if not isinstance(fate, Fate):
            raise TypeError(f"A fate must be a Fate (e.g. Fate.crash_loop()), got {fate!r}.")
        rule = FateRule(as_selector(selector), fate, namespace, next(self._serials))
        self._rules.insert(0, rule)
        self._changed()
        return rule

    def remove(self, rule: FateRule) -> None:
        if rule in self._rules:
            self._rules.remove(rule)
            self._changed()

    def clear(self) -> None:
        if self._rules:
            self._rules.clear()
            self._changed()

    def rule_for(self, namespace: str | None, labels: Mapping[str, str] | None) -> FateRule | None:
        for rule in self._rules:
            if rule.matches(namespace, labels):
                return rule
        return None

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()
