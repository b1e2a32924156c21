"""A hypothesis state machine that drives an operator on a simulated cluster: :class:`OperatorMachine`.

Each example gets a fresh :class:`World`: a virtual-time loop, a simulated cluster with the
manifests applied, and the operator started from its files, modules or registry. The machine's
rules are the actions of :mod:`pytest_kopf.strategies` (create, patch, delete, advance the time,
settle; and the perturbations of the checks it runs: API errors, stale reads, withheld events,
crashes); at the end of each example, the checks judge the run (:func:`pytest_kopf.checks.verify`),
and a failure carries the (shrunk) steps and a runnable reproduction. For the checks that compare
end states, a second world (the baseline) gets the same user actions with no faults and no crashes.

Usage::

    from pytest_kopf.stateful import OperatorMachine, rule

    class MyOperator(OperatorMachine):
        paths = ["operator.py"]
        manifests = ["crd.yaml"]
        resources = ["memcacheds.demo.example"]
        checks = ["convergence", "crash-restart"]

        @rule()
        async def scale_a_lot(self) -> None:           # async rules & invariants run in the world's loop
            await self.cluster.patch("memcacheds.demo.example", "obj-0", {"spec": {"size": 9}})

    TestMyOperator = MyOperator.TestCase

Rules and invariants take the decorators of this module (:func:`rule`, :func:`invariant`,
:func:`initialize`; :func:`precondition` is hypothesis' own); async ones run to completion in the
example's loop. A rule (or an initialize) is a user's action: a step (:class:`RuleStep`) done in the
checked world and in the baseline with the same arguments (``self.world`` is the world it runs in),
listed in a failure and replayed by its reproduction (:func:`run_rule`). Invariants look at the
checked world. Sync rules decorated by hypothesis itself run in the checked world only, unrecorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import functools
import hashlib
import inspect
import logging
import os
import pathlib
import pprint
import sys
import tempfile
import time
import types
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import hypothesis.stateful
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition

from kopf_sim.controllers import ControllerSettings, parse_selection
from kopf_sim.recording.replaying import read_log
from kopf_sim.timing.virtualtime import DEFAULT_EPOCH, LivelockError

from ._catalogue import (
    CATALOGUE,
    DIRECT,
    Phase,
    comparing,
    deleting,
    noise_judged,
    perturbation_kinds,
    perturbed_first,
    plan_kinds,
    referenced,
)
from ._clientconfig import routed_clients
from ._clocks import is_operator_code, virtual_clocks, virtualize_module
from ._history import handler_ids, history_aside, history_masked
from ._judges import livelocked
from ._noise import EPOCH_OFFSET, NoiseField, described, learn
from ._oracles import final_bodies, record_creations, refused, reversals
from ._plans import Plan, PlanFigures, Pruning, derive
from ._randomness import ANTITHETIC_SEED, seeded
from ._report.coverage import Coverage
from ._report.failures import FailureEvidence
from ._report.states import comparison_masking
from ._running import TestLoop
from ._storms import watch_storms
from ._tracing import Log, Trace
from ._vacuity import Reach
from ._verdicts import RunOptions, compared, gathered, judged, verify
from .cluster import Manifests, SimKopfCluster, _documents
from .driving import (
    DEFAULT_QUIET,
    DEFAULT_RESTART_DELAY,
    DEFAULT_SETTLE_TIMEOUT,
    Refusal,
    caught_up,
    end_state,
    revived,
    settle,
    without_bookkeeping,
)
from .errors import OperatorCheckFailed
from .operator import KopfOperator
from .plugin import running_test_controllers
from .strategies.schemas import CustomResource, resources_in
from .strategies.steps import (
    Action,
    Advance,
    Create,
    Delete,
    Driver,
    MergePatch,
    Outcome,
    ReplayLog,
    Settle,
    canonical,
    mixed,
    perturbations,
    user_actions,
)

if TYPE_CHECKING:
    import kopf

__all__ = [
    "Compared",
    "OperatorMachine",
    "OperatorSpec",
    "ReplayedData",
    "RuleStep",
    "Statistics",
    "World",
    "initialize",
    "invariant",
    "precondition",
    "rule",
    "run_rule",
]

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])


#: The seed of the second fault-free run (the reference); the checked run and the baseline have 0.
REFERENCE_SEED = ANTITHETIC_SEED  # (its randomness: the antithetic of seed 0's)
#: How far on the resourceVersions of a world with another seed than 0 begin: a resourceVersion that an operator
#: copies (``status.observedVersion`` of its child) differs between the two references, so is learned as noise.
REVISION_OFFSET = 1000
#: The pseudo-module of the machines made by :meth:`OperatorMachine.configured` (no module defines them).
CONFIGURED = "<configured>"


@dataclasses.dataclass(frozen=True)
class OperatorSpec:
    """What one world runs: the operator, the manifests of its cluster, and how long to let it settle."""

    paths: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    registry: Callable[[], kopf.OperatorRegistry] | None = None
    manifests: tuple[Manifests, ...] = ()
    namespace: str = "default"
    quiet: float = DEFAULT_QUIET
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT
    restart_delay: float = DEFAULT_RESTART_DELAY
    #: The simulated clusters' built-in controllers (None: all of them, with the default timings).
    controllers: ControllerSettings | None = None


@dataclasses.dataclass(frozen=True)
class UsersActions(Action):
    """A reproduction's users' actions as one step: its ``users_actions(kopf_cluster, kopf_operator)``, which does
    the steps of the users (no faults, no crashes), each followed by ``caught_up``."""

    actions: Callable[[Any, Any], Coroutine[Any, Any, None]]

    async def apply(self, driver: Driver) -> Outcome:
        await self.actions(driver.cluster, driver.operator)
        return "ok"

    def code(self) -> str:
        return f"await {self.actions.__name__}(kopf_cluster, kopf_operator)"


@dataclasses.dataclass(frozen=True)
class Compared:
    """What a reproduction's run is compared with: the end state of the same users' actions with no faults
    (``expected``), of the driven objects created directly in their final state (``direct``), and the noise."""

    expected: list[dict[str, Any]] | None = None
    direct: list[dict[str, Any]] | None = None
    noise: list[NoiseField] = dataclasses.field(default_factory=list)


def operator_digest(paths: Sequence[str | os.PathLike[str]], manifests: Sequence[Manifests]) -> str:
    """A digest of the operator's files and the manifests (their contents, not where they are): what a reproduction's
    expected end state was made with. Another digest (the operator fixed, or another one named) makes it anew. The
    modules that the files import are not in it."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(pathlib.Path(path).read_bytes() if os.path.exists(path) else b"")
        digest.update(b"\0")
    for manifest in manifests:
        if isinstance(manifest, str | os.PathLike) and _is_file_name(manifest) and os.path.exists(manifest):
            digest.update(pathlib.Path(manifest).read_bytes())
        else:
            digest.update(repr(manifest).encode())
    return digest.hexdigest()[:16]


class World:
    """A fresh virtual-time loop, a simulated cluster with the manifests, and the operator started in it.

    The clocks are set up as for a sim-mode test with the fixtures (``kopf_loop``): while the world is
    open, :func:`~pytest_kopf._clocks.virtual_clocks` is in force, so ``time.time()``, ``time.sleep()``,
    kopf's sync waits etc. in its operator's code follow its loop's clock. Two worlds (the checked one and
    the baseline) are open at once and run alternately: the clocks read the loop that runs the code (or
    whose executor job it is), so each world's code sees its own time. The names of ``datetime`` are swapped
    in the user's ``modules`` (e.g. the test's module; and the registry maker's) as the fixture does for
    the test's module; the operator's files & modules get theirs as they are loaded (in any mode).

    Its randomness is seeded (:mod:`pytest_kopf._randomness`): ``random``, ``secrets``, ``uuid`` and
    ``os.urandom`` in its operator's code draw the same values for the same ``seed`` in every run (the
    reference, ``REFERENCE_SEED``, draws the antithetic of seed 0: unlike the baseline in every draw, even a
    choice of two); the simulated cluster's uids (and what derives from them: generated names, allocated
    addresses) follow ``seed`` too, and so do its resourceVersions (``REVISION_OFFSET`` further on for every
    seed but 0).
    ``epoch``: the wall-clock moment of its loop's time 0 (the timestamps it writes).
    """

    def __init__(
        self,
        spec: OperatorSpec,
        *,
        modules: Sequence[types.ModuleType] = (),
        seed: int = 0,
        epoch: datetime.datetime = DEFAULT_EPOCH,
    ) -> None:
        self.spec = spec
        self.seed = seed
        self.epoch = epoch
        self.test_loop = TestLoop(virtual=True, epoch=epoch)
        self.cluster = SimKopfCluster(
            loop=self.test_loop.loop,
            tmp_dir=_tmp_dir,
            seed=seed,
            controllers=spec.controllers,
            revision_offset=REVISION_OFFSET if seed else 0,
        )
        self.clients = contextlib.ExitStack()  # the official clients routed to this world's cluster
        self.operator = KopfOperator(self.cluster)
        self.trace = Trace(self.test_loop.loop)
        self.trace.install(self.cluster)
        watch_storms(self.cluster)  # a storm of retries fails the run at once, as an endless loop does
        self.created: set[str] = set()  # the uids of the objects that the operator creates (once it has started)
        self.closed = False
        self.clocks = contextlib.ExitStack()  # the virtual clocks, in force while the world is open
        self.clocks.enter_context(virtual_clocks())
        self.clocks.enter_context(seeded(self.test_loop.loop, seed))  # random, secrets, uuid, os.urandom
        maker = sys.modules.get(getattr(spec.registry, "__module__", None) or "")
        for module in dict.fromkeys([*modules, *([maker] if maker is not None else [])]):
            if is_operator_code(module):  # undone when the world closes (if it is the one that swapped them)
                self.clocks.callback(virtualize_module(module))
        try:
            self.run(self._setup())
        except BaseException:
            self.close()
            raise

    @property
    def restart_delay(self) -> float:
        return self.spec.restart_delay

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.test_loop.loop

    async def _setup(self) -> None:
        await self.cluster.setup()
        self.clients.enter_context(routed_clients(self.loop, self.cluster.sim.server, _clients_dir()))
        for manifest in self.spec.manifests:
            await self.cluster.apply(manifest)
        await self.operator.start(
            paths=self.spec.paths,
            modules=self.spec.modules,
            registry=self.spec.registry() if self.spec.registry is not None else None,
        )
        self.created = record_creations(self.cluster)

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run a coroutine to its end in this world's loop (its kopf log lines go to this world's trace)."""
        with self.trace.active():
            return self.test_loop.run(coro)

    async def settle(self) -> bool:
        return await settle(self.cluster, self.operator, quiet=self.spec.quiet, timeout=self.spec.settle_timeout)

    def close(self) -> None:
        """Stop the operator (no matter how it ends), tear the cluster down, close the loop."""
        if self.closed:
            return
        self.closed = True
        try:
            with contextlib.suppress(Exception):
                self.run(revived(self.operator))
            with contextlib.suppress(Exception):
                self.run(self.operator.stop())
            with contextlib.suppress(Exception):
                self.run(self.cluster.teardown())
        finally:
            try:
                self.clients.close()
                self.test_loop.close()
            finally:
                self.clocks.close()


def _tmp_dir() -> pathlib.Path:
    return pathlib.Path(tempfile.mkdtemp(prefix="kopf-world-"))


@functools.cache
def _clients_dir() -> pathlib.Path:
    """The worlds' kubeconfigs for the official clients (one at a time: removed when its world closes)."""
    return _tmp_dir()


@dataclasses.dataclass
class Statistics:
    """What a machine class has run so far (all its examples, the shrinking included)."""

    examples: int = 0
    steps: int = 0
    faults: int = 0
    crashes: int = 0
    failures: int = 0
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0
    #: The outcomes of the users' actions on objects in the checked worlds (did any reach the operator?).
    reach: Reach = dataclasses.field(default_factory=Reach)
    #: The fields learned as noise in any example (see :mod:`pytest_kopf._noise`).
    noise: set[NoiseField] = dataclasses.field(default_factory=set)
    #: The fault plans of each check: derived, pruned, run (see :mod:`pytest_kopf._plans`).
    plans: dict[str, PlanFigures] = dataclasses.field(default_factory=dict)


# -- async rules & invariants ------------------------------------------------------------------------


def _in_loop(fn: _F) -> _F:
    """A sync method that runs an async method to completion in the machine's (checked) world."""
    if not inspect.iscoroutinefunction(fn):
        return fn

    @functools.wraps(fn)
    def run(self: OperatorMachine, *args: Any, **kwargs: Any) -> Any:
        return self.world.run(fn(self, *args, **kwargs))

    run.__kopf_async__ = True  # type: ignore[attr-defined]
    return run  # type: ignore[return-value]


def _as_step(fn: _F) -> _F:
    """A rule's method that the machine performs as a step (:class:`RuleStep`): in every world, recorded."""

    @functools.wraps(fn)
    def perform(self: OperatorMachine, **arguments: Any) -> Any:
        owner = next((klass for klass in type(self).__mro__ if vars(klass).get(fn.__name__) is perform), type(self))
        step = RuleStep(owner, fn.__name__, fn, {key: _drawn(value) for key, value in arguments.items()})
        self.perform(step)
        return step.result

    perform.__kopf_async__ = True  # type: ignore[attr-defined]
    perform.__kopf_rule__ = fn  # type: ignore[attr-defined]
    return perform  # type: ignore[return-value]


def rule(**kwargs: Any) -> Callable[[_F], _F]:
    """Hypothesis' ``@rule``, for users' actions (``async def`` or not): done in the checked world and the baseline.

    The comparing checks compare the two worlds' end states, so a user's action must happen in both (with the
    same arguments; ``self.world``, ``self.cluster``, ``self.operator`` are those of the world it runs in).
    It is a step of the example (:class:`RuleStep`), listed in a failure and replayed by its reproduction.
    """
    decorate: Callable[[_F], _F] = hypothesis.stateful.rule(**kwargs)
    return lambda fn: decorate(_as_step(fn))


def invariant(**kwargs: Any) -> Callable[[_F], _F]:
    """Hypothesis' ``@invariant``, which also takes ``async def`` methods (run in the checked world)."""
    return lambda fn: hypothesis.stateful.invariant(**kwargs)(_in_loop(fn))


def initialize(**kwargs: Any) -> Callable[[_F], _F]:
    """Hypothesis' ``@initialize``, for users' actions at the start (as :func:`rule`: in every world, recorded)."""
    decorate: Callable[[_F], _F] = hypothesis.stateful.initialize(**kwargs)
    return lambda fn: decorate(_as_step(fn))


class ReplayedData:
    """A rule's ``st.data()`` argument: the draws of its first run, given again in the other world and in replays.

    In a reproduction, ``ReplayedData([...])`` stands for the data object with the values drawn in the example.
    """

    def __init__(self, values: Sequence[Any] = (), *, source: Any = None) -> None:
        self.values = list(values)
        self._source = source  # hypothesis' data object, for the first run only
        self._position = 0

    def draw(self, strategy: st.SearchStrategy[_T], label: Any = None) -> _T:
        if self._source is not None:
            value: _T = self._source.draw(strategy, label=label)
            self.values.append(value)
            return value
        if self._position >= len(self.values):
            raise RuntimeError(
                f"The rule draws more values than in its first run ({len(self.values)}): its draws must not "
                f"depend on the state of the world it runs in."
            )
        self._position += 1
        return self.values[self._position - 1]  # type: ignore[no-any-return]

    def again(self) -> ReplayedData:
        """The same draws for the next run of the rule (the first run's, once it is over)."""
        self._source = None
        return ReplayedData(self.values)

    def __repr__(self) -> str:
        return f"ReplayedData({self.values!r})"


def _drawn(value: Any) -> Any:
    return ReplayedData(source=value) if isinstance(value, st.DataObject) else value


class _FixtureWorld:
    """What ``self.world`` is for a rule done by :func:`run_rule` in a test with the fixtures."""

    def __init__(self, cluster: SimKopfCluster, operator: KopfOperator) -> None:
        self.cluster = cluster
        self.operator = operator
        self.loop = asyncio.get_running_loop()

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        coro.close()
        raise RuntimeError(
            "A sync rule that runs coroutines with self.world.run() cannot run in an async test: make the rule async."
        )


async def run_rule(
    machine: type[OperatorMachine],
    name: str,
    kopf_cluster: SimKopfCluster,
    kopf_operator: KopfOperator,
    /,
    **arguments: Any,
) -> Any:
    """Do a machine's rule in a test with the fixtures (a reproduction's step): ``self.cluster`` is ``kopf_cluster``.

    The rule runs on a bare instance of the machine (no worlds of its own, its ``__init__`` not run): enough for a
    rule that acts through ``self.cluster``/``self.operator`` and the machine's class attributes.
    """
    function = vars(machine).get(name) or getattr(machine, name)
    original = getattr(function, "__kopf_rule__", function)
    instance = machine.__new__(machine)
    instance.world = _FixtureWorld(kopf_cluster, kopf_operator)  # type: ignore[assignment]
    result = original(instance, **arguments)
    return await result if inspect.isawaitable(result) else result


@dataclasses.dataclass(frozen=True, eq=False)
class RuleStep(Action):
    """A user's rule of a machine as a step: done in every world with the same arguments, replayed in reproductions."""

    machine: type[OperatorMachine]
    name: str
    function: Callable[..., Any] = dataclasses.field(repr=False)
    arguments: dict[str, Any]
    result: Any = dataclasses.field(default=None, repr=False)  # the checked world's (for hypothesis' bundles)

    def call(self, machine: OperatorMachine, world: World) -> Any:
        """Run the rule with ``machine.world`` set to this world (sync rules outside of its loop, as in hypothesis)."""
        arguments = {
            key: value.again() if isinstance(value, ReplayedData) and value._source is None else value
            for key, value in self.arguments.items()
        }
        checked = machine.world
        machine.world = world
        try:
            if inspect.iscoroutinefunction(self.function):
                return world.run(self.function(machine, **arguments))
            return self.function(machine, **arguments)
        finally:
            machine.world = checked
            for value in self.arguments.values():
                if isinstance(value, ReplayedData):
                    value._source = None  # drawn once: the next runs replay these draws

    async def apply(self, driver: Driver) -> Outcome:
        raise TypeError("A machine's rule is done by the machine (OperatorMachine.perform), not applied to a world.")

    @property
    def importable(self) -> bool:
        return "<locals>" not in self.machine.__qualname__ and self.machine.__module__ != "__main__"

    def imports(self) -> list[str]:
        if not self.importable:
            return []
        return [
            "from pytest_kopf.stateful import ReplayedData, run_rule  # noqa: F401",
            f"from {self.machine.__module__} import {self.machine.__qualname__.split('.')[0]}",
        ]

    def code(self) -> str:
        arguments = "".join(f", {key}={value!r}" for key, value in self.arguments.items())
        if self.importable:
            return f"await run_rule({self.machine.__qualname__}, {self.name!r}, kopf_cluster, kopf_operator{arguments})"
        called = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return (
            f"# here, the rule {self.machine.__qualname__}.{self.name}({called}) of the machine (module "
            f"{self.machine.__module__}): its class is not importable; do what it does by hand"
        )


# -- the machine ------------------------------------------------------------------------------------


class OperatorMachine(RuleBasedStateMachine):
    """The base class of state machines that drive an operator; see the module's docs.

    Set in subclasses: the operator (:attr:`paths`, :attr:`modules`, or :attr:`registry`: a function
    making a fresh registry), the :attr:`manifests` to apply, the :attr:`resources` to drive, the
    :attr:`checks` to run at the end of each example, and optionally :attr:`specs` (strategies for the
    specs by resource name), :attr:`names` of the objects, :attr:`mask` (more volatile fields).
    In rules & invariants: :attr:`world` (:attr:`cluster`, :attr:`operator`) is the checked run.
    """

    paths: ClassVar[Sequence[str | os.PathLike[str]]] = ()
    modules: ClassVar[Sequence[str]] = ()
    registry: ClassVar[Callable[[], kopf.OperatorRegistry] | None] = None
    manifests: ClassVar[Sequence[Manifests]] = ()
    resources: ClassVar[Sequence[str]] = ()
    checks: ClassVar[Sequence[str]] = ("convergence",)
    specs: ClassVar[Mapping[str, st.SearchStrategy[Any]]] = {}
    names: ClassVar[Sequence[str]] = ("obj-0", "obj-1")
    namespace: ClassVar[str] = "default"
    mask: ClassVar[Sequence[str]] = ()
    quiet: ClassVar[float] = DEFAULT_QUIET
    settle_timeout: ClassVar[float] = DEFAULT_SETTLE_TIMEOUT
    restart_delay: ClassVar[float] = DEFAULT_RESTART_DELAY
    max_advance: ClassVar[float] = 120
    #: Recorded watch-event logs, replayed as one of the users' actions (:class:`~pytest_kopf.strategies.ReplayLog`).
    logs: ClassVar[Sequence[str | os.PathLike[str]]] = ()
    #: Steps done at the start of every example, in every world (e.g. a recorded incident replayed as the
    #: starting state: ``[ReplayLog("incident.jsonl", until=30)]``); reproductions begin with them.
    initial_steps: ClassVar[Sequence[Action]] = ()
    #: The objects present, as the users' actions so far tell (see present()); None: to be read from the world.
    _presence: set[tuple[str, str]] | None = None
    #: What the operator may leave after its objects are deleted, on purpose (``cleanup``): ``resource/name`` globs.
    retained: ClassVar[Sequence[str]] = ()
    #: Where the driven objects' fields must be found after settling, e.g.
    #: ``{"spec.replicas": "deployments/{name}.spec.replicas"}``: judged (as the ``consistency`` check) in every
    #: world of every example, whatever the machine's checks.
    consistency: ClassVar[Mapping[str, str]] = {}
    statistics: ClassVar[Statistics | None] = None
    #: The built-in controllers of the worlds' clusters: a selection as the ``kopf_controllers`` marker takes
    #: (``"none"``, ``"all,-cronjobs"``, ``False``) or :class:`~kopf_sim.controllers.ControllerSettings`;
    #: by default, those of the test being run (its ``kopf_controllers`` ini option and marker), as for the fixtures.
    controllers: ClassVar[ControllerSettings | str | Sequence[str] | bool | None] = None
    #: What the examples covered (the actions and faults by kind, the handlers reached), if counted.
    coverage: ClassVar[Coverage | None] = None
    #: Called after each step and each example (when :attr:`statistics` has changed): the progress line's feed.
    progressed: ClassVar[Callable[[], None] | None] = None
    #: At most this many fault plans per check run after each example (see :mod:`pytest_kopf._plans`); 0: none.
    max_plans: ClassVar[int] = 5
    #: At most this many fault plans per check run in all (None: no limit but ``max_plans`` per example).
    plan_budget: ClassVar[int | None] = None

    _pruning: ClassVar[Pruning | None] = None
    _customs: ClassVar[list[CustomResource] | None] = None
    _user_strategies: ClassVar[dict[frozenset[tuple[str, str]] | None, st.SearchStrategy[Action]] | None] = None
    _step_strategies: ClassVar[dict[frozenset[tuple[str, str]] | None, st.SearchStrategy[Action]] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._customs = cls._user_strategies = cls._step_strategies = None
        cls._pruning = Pruning()
        for name, value in vars(cls).items():
            target = inspect.unwrap(value) if callable(value) else value
            if (
                inspect.iscoroutinefunction(target)
                and not getattr(value, "__kopf_async__", False)
                and any(hasattr(value, marker) for marker in dir(value) if marker.startswith("hypothesis_stateful"))
            ):
                raise TypeError(
                    f"{cls.__name__}.{name} is an async rule or invariant decorated by hypothesis itself; "
                    f"use the decorators of pytest_kopf.stateful (rule, invariant, initialize) instead."
                )

    @classmethod
    def configured(cls, name: str, **attributes: Any) -> type[OperatorMachine]:
        """A subclass with these class attributes (e.g. for :func:`~pytest_kopf.checks.check_operator`)."""
        values: dict[str, Any] = {
            key: (tuple(value) if isinstance(value, list) else value)
            for key, value in attributes.items()
            if value is not None
        }
        if "registry" in values:
            values["registry"] = staticmethod(values["registry"])
        # Made here, it is in no module's source. Hypothesis digests a machine by its source (inspect.getsource):
        # for a class of a module, that parses the whole module (stateful.py: ~50-130 ms per check run) only to
        # find no such class and fall back to the class's name. A module name that is no module gets the same
        # fallback (the same digest) at once.
        suffix = f".{CONFIGURED}"
        values["__module__"] = cls.__module__ if cls.__module__.endswith(suffix) else cls.__module__ + suffix
        return type(name, (cls,), values)

    # -- the configuration, resolved once per class ----------------------------------------------

    @classmethod
    def spec(cls) -> OperatorSpec:
        registry = cls.__dict__.get("registry", None)
        for klass in cls.__mro__:
            if "registry" in klass.__dict__:
                registry = klass.__dict__["registry"]
                break
        factory = registry.__func__ if isinstance(registry, staticmethod) else registry
        return OperatorSpec(
            paths=tuple(os.fspath(path) for path in cls.paths),
            modules=tuple(cls.modules),
            registry=factory,
            manifests=tuple(cls.manifests),
            namespace=cls.namespace,
            quiet=cls.quiet,
            settle_timeout=cls.settle_timeout,
            restart_delay=cls.restart_delay,
            controllers=_controllers(cls.controllers),
        )

    @classmethod
    def custom_resources(cls) -> list[CustomResource]:
        if cls._customs is None:
            documents = [doc for manifest in cls.manifests for doc in _documents(manifest)]
            known = resources_in(documents)
            found: list[CustomResource] = []
            for name in cls.resources:
                match = next((custom for custom in known if name in custom.names), None)
                if match is None:
                    raise ValueError(
                        f"{cls.__name__}: no CRD among the manifests defines the resource {name!r}; "
                        f"they define: {', '.join(c.qualified for c in known) or 'none'}."
                    )
                found.append(match)
            if not found:
                raise ValueError(f"{cls.__name__}: no resources to drive (set resources = ['plural.group']).")
            cls._customs = found
        return cls._customs

    @classmethod
    def perturbation_kinds(cls) -> tuple[str, ...]:
        return perturbation_kinds(cls.checks)

    @classmethod
    def user_strategy(cls, present: frozenset[tuple[str, str]] | None = None) -> st.SearchStrategy[Action]:
        """The users' actions; with ``present`` (the objects there now), those that make sense for them."""
        if cls._user_strategies is None:
            # A bad log fails here, once, naming its lines; not as a failing example, when a replay is drawn.
            for log in [*cls.logs, *(step.log for step in cls.initial_steps if isinstance(step, ReplayLog))]:
                read_log(log)
            cls._user_strategies = {}
        if present not in cls._user_strategies:
            cls._user_strategies[present] = user_actions(
                cls.custom_resources(),
                names=cls.names,
                namespace=cls.namespace,
                specs=cls.specs,
                max_advance=cls.max_advance,
                logs=cls.logs,
                deletes=deleting(cls.checks),
                present=present,
            )
        return cls._user_strategies[present]

    @classmethod
    def step_strategy(cls, present: frozenset[tuple[str, str]] | None = None) -> st.SearchStrategy[Action]:
        """A step: mostly a user's action, else a perturbation of the machine's checks."""
        if cls._step_strategies is None:
            cls._step_strategies = {}
        if present not in cls._step_strategies:
            users = cls.user_strategy(present)
            kinds = cls.perturbation_kinds()
            perturbing = perturbations(kinds, cls.custom_resources(), names=cls.names, specs=cls.specs)
            cls._step_strategies[present] = mixed(users, perturbing) if kinds else users
        return cls._step_strategies[present]

    def present(self) -> frozenset[tuple[str, str]]:
        """The driven objects there now (as ``(plural.group, name)``), as the users' actions so far have left them.

        Told from the steps drawn (a create makes its object present, a delete absent), not from the checked
        world: the steps that hypothesis draws next depend on it, so it must be the same whenever the same steps
        are drawn again, also for an operator whose runs differ in what virtual time does not order (sync
        handlers in threads); else hypothesis stops with ``FlakyStrategyDefinition``. Only after a step whose
        effect on the objects is not known (a recorded log, a user's rule) is the checked world read.
        """
        if self._presence is None:
            store = self.world.cluster.sim.store
            presence: set[tuple[str, str]] = {
                (custom.qualified, name)
                for custom in self.custom_resources()
                for name in self.names
                if store.peek((custom.group, custom.plural), self.namespace if custom.namespaced else None, name)
            }
            self._presence = presence
        return frozenset(self._presence)

    def _presence_after(self, action: Action, outcome: Outcome) -> None:
        """Follow a user's action in the model of the objects present (see :meth:`present`). A create refused as
        invalid (400, 422: the same in every run) has made nothing; other refusals depend on timing: not heeded."""
        if self._presence is None or not action.user:
            return
        if isinstance(action, Create) and isinstance(outcome, Refusal) and outcome.code in (400, 422):
            return
        if isinstance(action, Create):
            metadata = action.body.get("metadata") or {}
            kind, api_version = action.body.get("kind"), action.body.get("apiVersion")
            resource = next(
                (
                    custom.qualified
                    for custom in self.custom_resources()
                    if (custom.kind, custom.api_version) == (kind, api_version)
                ),
                None,
            )
            if resource is not None and metadata.get("name") in self.names:
                self._presence.add((resource, metadata["name"]))
        elif isinstance(action, Delete):
            self._presence.discard((action.resource, action.name))
        elif not isinstance(action, MergePatch | Advance | Settle):
            self._presence = None  # not known: read from the checked world when asked next

    # -- one example ------------------------------------------------------------------------------

    def __init__(self) -> None:
        super().__init__()
        spec = self.spec()
        self.custom_resources()  # fail early on a bad configuration
        self.steps: list[Action] = []
        self.failed = False
        self.diverged: str | None = None  # the end states are not comparable: a user's action went otherwise
        self.outcomes: list[Outcome] = []  # of the users' actions in the baseline (to compare planned runs with)
        self._expected: list[dict[str, Any]] | None = None
        self._expected_known = False
        # Two operators at once (the world & the baseline) would leave the kopf logger's level changed: restored.
        self._kopf_level = logging.getLogger("kopf").level
        # As the kopf_loop fixture does for a test's module: datetime.now() & co. in the rules follow the clock.
        modules = [sys.modules[klass.__module__] for klass in type(self).__mro__ if klass.__module__ in sys.modules]
        self._modules = modules
        #: The checked run: its cluster, operator and loop.
        self.world = World(spec, modules=modules)
        self.baseline: World | None = None
        #: The same user actions once more with no faults, seeded and clocked otherwise: what differs is noise.
        self.reference: World | None = None
        #: The noise learned from the baseline & the reference (once their end states are known).
        self.noise: frozenset[NoiseField] = frozenset()
        #: The users' actions done so far, with their outcomes here and in the baseline (for a reference made later).
        self._users_done: list[tuple[Action, Outcome, Outcome]] = []
        #: What would learn more noise, run once a comparison has found a difference (the noise only matters then):
        #: the reference when no judge masks the noise (:meth:`_later_reference`), the second direct world.
        self._noise_later: list[Callable[[], None]] = []
        self._direct_refused = False  # in the second direct world (see :meth:`direct`)
        #: The planned runs' worlds open when the reference was made (in their verdicts): closed after it.
        self._closed_later: list[World] = []
        try:
            if comparing(self.checks):
                self.baseline = World(spec, modules=modules)
            if referenced(self.checks) and noise_judged(self.checks):
                self.reference = World(spec, modules=modules, seed=REFERENCE_SEED, epoch=DEFAULT_EPOCH + EPOCH_OFFSET)
            elif referenced(self.checks):
                self._noise_later.append(self._later_reference)
        except BaseException:
            if self.baseline is not None:
                self.baseline.close()
            self.world.close()
            logging.getLogger("kopf").setLevel(self._kopf_level)
            raise
        if self.statistics is not None:
            self.statistics.examples += 1
        try:
            for step in self.initial_steps:
                self._apply(step)
        except BaseException:
            self.close()
            raise

    @property
    def cluster(self) -> SimKopfCluster:
        return self.world.cluster

    @property
    def operator(self) -> KopfOperator:
        return self.world.operator

    def perform(self, action: Action) -> None:
        """Apply an action to the checked world (and, if it is a user's action, to the baseline)."""
        self.steps.append(action)
        if self.coverage is not None:
            self.coverage.add_step(action)
        if self.statistics is not None:
            self.statistics.steps += 1
            self._progressed()
        self.failed = True  # until the step is done in every world
        try:
            self._presence_after(action, self._apply(action))
        except LivelockError as exc:  # an endless update loop: the loop's clock stood still in the step (or a storm)
            failure = livelocked(exc)
            raise failure.with_context(
                steps=self.steps,
                trace_tail=self.world.trace.tail(),
                reproduction=self.reproduction(failure.check),
                evidence=self.evidence(),
            ) from None
        self.failed = False

    def _apply(self, action: Action) -> Outcome:
        """The action in every world it is done in; its outcome in the checked world."""
        self.world.trace.step(action.code(), restarts=action.restarts, user=action.user)
        outcome = expected = self._apply_in(self.world, action)
        if action.user and self.statistics is not None:  # a user's rule is taken as reaching the operator
            self.statistics.reach.record(action, "ok" if isinstance(action, RuleStep) else outcome)
        if action.user and self.baseline is not None:
            self.baseline.trace.step(action.code(), restarts=action.restarts)
            expected = self._apply_in(self.baseline, action)
            self.outcomes.append(expected)
            if outcome != expected:  # e.g. a create of a name still being deleted in one run only
                self.diverged = f"{action.code()} was {outcome} here, {expected} in the run with no faults"
                self.world.trace.note("diverged", self.diverged)
        if action.user:
            self._users_done.append((action, outcome, expected))
        if action.user and self.reference is not None:
            self._apply_in_reference(action, outcome, expected)
        return outcome

    def _apply_in_reference(self, action: Action, outcome: Outcome, expected: Outcome) -> None:
        """A user's action in the reference; its outcome there compared with those in the checked run & the baseline."""
        assert self.reference is not None
        self.reference.trace.step(action.code(), restarts=action.restarts)
        again = self._apply_in(self.reference, action)
        if outcome == expected != again and self.diverged is None:  # the fault-free runs disagree by themselves
            self.diverged = f"{action.code()} was {expected} in a run with no faults, {again} in another one"
            self.world.trace.note("diverged", self.diverged)

    def _later_reference(self) -> None:
        """The reference made now (no judge masks the noise: only a comparison that differs needs it): the users'
        actions done in it as they were done beside the checked run; its noise learned as :meth:`expected` does."""
        self.reference = World(
            self.spec(), modules=self._modules, seed=REFERENCE_SEED, epoch=DEFAULT_EPOCH + EPOCH_OFFSET
        )
        try:
            for action, outcome, expected in self._users_done:
                self._apply_in_reference(action, outcome, expected)
        except LivelockError as exc:  # an endless update loop with no faults: as the same in a step
            self.failed = True
            raise livelocked(exc).with_context(
                steps=self.steps,
                trace_tail=self.reference.trace.tail(),
                reproduction=self.reproduction("convergence"),
                evidence=self.evidence(),
            ) from None
        if self._expected_known and self._expected is not None:
            other = self._fault_free_end_state(self.reference, ", seeded and clocked otherwise")
            self._learn(self._learned(self._expected, other))

    def _learn_more_noise(self) -> bool:
        """Run what learns more noise (once per example): whether anything has run."""
        later, self._noise_later = self._noise_later, []
        for learning in later:
            learning()
        return bool(later)

    def _verdict(self, world: World, checks: Sequence[str], **options: Any) -> OperatorCheckFailed | None:
        """The checks' verdict on a world, as :func:`~pytest_kopf._verdicts.verify` gives it: the first failure, if any.

        When a comparison finds a difference, the noise not learned yet is learned (:meth:`_learn_more_noise`) and
        the end state compared again with it masked: the same verdict as with all the noise learned beforehand.
        """
        chosen = [CATALOGUE[check] for check in checks]
        try:
            evidence = world.run(gathered(world.cluster, world.operator, noise=self.noise, **options))
            world.run(judged(evidence, chosen, before=Phase.COMPARED))
        except OperatorCheckFailed as exc:
            return exc
        failure = compared(evidence, chosen)
        if failure is not None and self._learn_more_noise():  # (a failure of those runs is raised as it is)
            evidence.noise = list(self.noise)
            if world is self.world and self.diverged is not None:
                evidence.expected = None  # the fault-free runs disagree: not comparable (as in :meth:`expected`)
            if self._direct_refused:
                evidence.direct = None  # (as in :meth:`direct`)
            failure = compared(evidence, chosen)
        if failure is not None:
            return failure
        try:
            world.run(judged(evidence, chosen, after=Phase.COMPARED))
        except OperatorCheckFailed as exc:
            return exc
        return None

    def _apply_in(self, world: World, action: Action) -> Outcome:
        """Do a step in one world; it ends when the operator has caught up with it (as in a reproduction)."""
        if isinstance(action, RuleStep):
            result = action.call(self, world)
            if world is self.world:
                object.__setattr__(action, "result", result)  # what hypothesis gets (e.g. for a bundle)
            world.run(caught_up(world.operator))
            return None
        return world.run(_step(action, world))

    @hypothesis.stateful.rule(data=st.data())
    def act(self, data: st.DataObject) -> None:
        """A user's action (create, patch the spec or the metadata, delete, advance the time, settle) that makes
        sense for the objects there now; or, one in four, a fault or a crash, as the checks of this machine need."""
        self.perform(data.draw(self.step_strategy(self.present()), label="step"))

    @hypothesis.stateful.invariant()
    def operator_is_alive(self) -> None:
        """The operator has not exited by itself (a crash of ours restarts it; its own exit is a failure)."""
        operator = self.world.operator
        if not operator.running and not operator.crashed and operator.exit_code is not None:
            self.failed = True
            raise OperatorCheckFailed(
                "convergence", f"the operator has exited (exit code {operator.exit_code}): {operator.exception!r}"
            ).with_context(
                steps=self.steps,
                trace_tail=self.world.trace.tail(),
                reproduction=self.reproduction("convergence"),
                evidence=self.evidence(),
            )

    def teardown(self) -> None:
        try:
            if not self.failed:  # not when a step or the operator has failed already: that failure is reported
                # The planned faults first: one fault placed, its failure the simplest to read and to shrink.
                self.run_plans()
                self.verify()
        except OperatorCheckFailed:
            self.failed = True
            raise
        finally:
            self.close()

    def close(self) -> None:
        """Count this example's figures; close its worlds."""
        try:
            self._count()
        finally:
            try:
                with contextlib.ExitStack() as worlds:  # closed in the reverse order of their making: the official
                    # clients' configuration is restored as it was (see _clientconfig.routed_clients)
                    made = [self.world, self.baseline, *self._closed_later, self.reference]
                    for world in made:
                        if world is not None:
                            worlds.callback(world.close)
            finally:
                logging.getLogger("kopf").setLevel(self._kopf_level)

    @classmethod
    def replay(cls, steps: Sequence[Action]) -> None:
        """Run these steps in a fresh example of this machine, then its checks (their failure is raised)."""
        machine = cls()
        try:
            for step in steps:
                machine.perform(step)
                machine.operator_is_alive()
            machine.verify()
        except OperatorCheckFailed:
            machine.failed = True
            raise
        finally:
            machine.close()

    @classmethod
    def reproduce(cls, steps: Sequence[Action], check: str) -> str:
        """The reproduction of these steps for this machine's operator, whether they fail the check or not.

        E.g. the steps of another operator's failure (a correct twin's): the test it gives passes for an
        operator that gets them right. For the comparing checks, the expected end state is that of this
        operator's own run of the steps with no faults and no crashes.
        """
        machine = cls()
        try:
            for step in steps:
                machine.perform(step)
            expected = machine.expected() if comparing([check]) else None
            direct = machine.direct() if comparing([check], DIRECT) else None
            return machine.reproduction(check, expected, direct=direct)
        finally:
            machine.close()

    @classmethod
    def fault_free(cls, users_actions: Callable[[Any, Any], Coroutine[Any, Any, None]], check: str) -> Compared:
        """What a reproduction of this check compares with, made by this machine's operator: the users' actions
        (a reproduction's ``users_actions``) run with no faults (and once more, seeded and clocked otherwise, for
        the noise), and for ``transition`` the driven objects created directly in their final state."""
        machine = cls()
        try:
            machine.perform(UsersActions(users_actions))
            expected = machine.expected() if comparing([check]) else None
            direct = machine.direct() if comparing([check], DIRECT) else None
            machine._learn_more_noise()  # all of the noise: a comparison with another operator's run may need it
            if machine._direct_refused:
                direct = None
            return Compared(expected=expected, direct=direct, noise=sorted(machine.noise))
        finally:
            machine.close()

    def _count(self) -> None:
        if self.statistics is not None:
            self.statistics.faults += len(self.world.cluster.sim.faults.injections)
            self.statistics.crashes += self.world.operator.crashes
            self.statistics.failures += self.failed
            self.statistics.virtual_seconds += self.world.loop.time()
            self._progressed()
        if self.coverage is not None:
            messages = [entry.message for entry in self.world.trace.of(Log)]
            self.coverage.add_example(self.world.cluster.sim.faults.injections, messages)

    def _progressed(self) -> None:
        progressed = type(self).progressed
        if progressed is not None:
            progressed()

    def _options(self) -> RunOptions:
        resources = [custom.qualified for custom in self.custom_resources()]
        return RunOptions(
            resources=resources,
            namespace=self.namespace,
            mask=self.mask,
            quiet=self.quiet,
            settle_timeout=self.settle_timeout,
            retained=self.retained,
            consistency=dict(self.consistency),
        )

    def expected(self) -> list[dict[str, Any]] | None:
        """The end state of the baseline (the same user actions with no faults and no crashes), if comparable.

        The reference (the same once more, seeded and clocked otherwise) settles too: what differs between the
        two is noise (:attr:`noise`), masked in the comparisons of this example.
        """
        if self.baseline is None:
            return None
        if not self._expected_known:  # once per example: the plans need it first, then the verdict
            self._expected = self._fault_free_end_state(self.baseline, "")
            if self.reference is not None:
                other = self._fault_free_end_state(self.reference, ", seeded and clocked otherwise")
                self._learn(self._learned(self._expected, other))
            self._expected_known = True
        return None if self.diverged is not None else self._expected  # the user actions went otherwise

    def _learned(self, one: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]]) -> frozenset[NoiseField]:
        """The fields that differ between two end states of correct runs, among those that the comparisons compare
        (how the states were reached aside, :mod:`pytest_kopf._history`; the times kept: to learn them)."""
        driven = [(custom.api_version, custom.kind) for custom in self.custom_resources()]
        handlers = handler_ids(self.world.operator)
        one, other = (history_masked(state, driven=driven, handlers=handlers, times=False) for state in (one, other))
        return learn(one, other)

    def _history_aside(self, *, times: bool = True) -> Callable[[Mapping[str, Any]], dict[str, Any] | None]:
        driven = [(custom.api_version, custom.kind) for custom in self.custom_resources()]
        return history_aside(driven=driven, handlers=handler_ids(self.world.operator), times=times)

    def _learn(self, noise: frozenset[NoiseField]) -> None:
        """Fields that differ between two correct runs: noise, masked in the comparisons of this example."""
        self.noise |= noise
        if self.statistics is not None:
            self.statistics.noise.update(noise)

    def _judged_in_every_world(self) -> list[str]:
        """What the fault-free worlds of an example (the baseline, the reference, the direct ones) are judged by:
        they must converge, and the declared correspondences (:attr:`consistency`) hold there too."""
        return ["convergence", *self._consistency()]

    def _consistency(self) -> list[str]:
        """``consistency`` if correspondences are declared: judged in every world, whatever the machine's checks."""
        return ["consistency"] if self.consistency else []

    def direct(self) -> list[dict[str, Any]] | None:
        """For ``transition``: the end state of a fresh world where the driven objects are created directly in the
        final state they have in the run with no faults (once it has settled, and converged: else that is the
        failure). Twice (seeded and clocked otherwise the second time): what differs between the two is noise.
        None if not comparable: the operator has refused a final spec (it may keep the last good state instead)."""
        if not comparing(self.checks, DIRECT):
            return None
        subject = self.baseline or self.world
        if subject is self.world:  # with no faults: the checked run itself (else the baseline is judged already)
            self._fault_free_end_state(self.world, "")
        driven = self._driven(subject)
        if any(refused(subject.cluster, obj) for obj in driven):
            return None
        settings = subject.cluster.sim.operator_settings  # the operator's bookkeeping is not the user's to write
        creates = [Create(body) for body in final_bodies(without_bookkeeping(obj, settings) for obj in driven)]
        state = self._direct_end_state(creates, 0, DEFAULT_EPOCH)
        if state is None:
            return None

        def again() -> None:  # seeded and clocked otherwise: once a comparison has found a difference
            other = self._direct_end_state(creates, REFERENCE_SEED, DEFAULT_EPOCH + EPOCH_OFFSET)
            if other is None:
                self._direct_refused = True
            else:
                self._learn(self._learned(state, other))

        self._noise_later.append(again)
        return state

    def _direct_end_state(
        self, creates: Sequence[Create], seed: int, epoch: datetime.datetime
    ) -> list[dict[str, Any]] | None:
        """The end state of a fresh world where ``creates`` are done (None: the operator has refused an object)."""
        world = World(self.spec(), modules=self._modules, seed=seed, epoch=epoch)
        try:
            for step in creates:
                world.trace.step(step.code())
                world.run(_step(step, world))
            how = ", with the driven objects created directly in their final state"
            state = self._fault_free_end_state(world, how, creates)
            if any(refused(world.cluster, obj) for obj in self._driven(world)):
                return None
            return state
        finally:
            world.close()

    def _driven(self, world: World) -> list[dict[str, Any]]:
        store = world.cluster.sim.store
        return [
            obj
            for custom in self.custom_resources()
            for obj in store.objects((custom.group, custom.plural), self.namespace if custom.namespaced else None)
        ]

    def _fault_free_end_state(
        self, world: World, how: str, steps: Sequence[Action] | None = None
    ) -> list[dict[str, Any]]:
        options = self._options()
        options["records"] = world.trace.records
        try:
            checking = verify(world.cluster, world.operator, checks=self._judged_in_every_world(), **options)
            return world.run(checking)
        except OperatorCheckFailed as exc:
            # The operator fails by itself, with no faults and no crashes: that is the failure to report (it is
            # the same with any faults), with its steps, that run's trace, and a reproduction of the users'
            # actions alone (in a world seeded as that run); shrunk as any failure of that check.
            raise OperatorCheckFailed(
                exc.check, f"{exc.details}\n(in a run with no faults and no crashes{how}: the operator fails by itself)"
            ).with_context(
                steps=self.steps,
                trace_tail=world.trace.tail(),
                reproduction=self.reproduction(
                    exc.check,
                    steps=[step for step in self.steps if step.user] if steps is None else steps,
                    seed=world.seed,
                    epoch=world.epoch,
                ),
                evidence=self.evidence(),
            ) from None

    def verify(self) -> None:
        """The checks' verdict on this example (see :func:`pytest_kopf.checks.verify`).

        A difference of the end states is due to the checks whose perturbations the example has (if any).
        """
        options = self._options()
        expected = self.expected()
        direct = self.direct()
        if "rollback" in self.checks and self.reference is not None:  # the same reversals, seeded otherwise
            for one, other in zip(reversals(self.world.cluster), reversals(self.reference.cluster), strict=False):
                self._learn(self._learned(one.before, other.before) | self._learned(one.after, other.after))
        kinds = {step.kind for step in self.steps if step.kind is not None}
        checks = perturbed_first([*self.checks, *self._consistency()], kinds)
        failure = self._verdict(
            self.world,
            checks,
            expected=expected,
            direct=direct,
            created=self.world.created,
            trace=self.world.trace,
            **options,
        )
        if failure is not None:
            expected = self.expected()  # (None, if the reference has been made since, and its actions went otherwise)
            direct = None if self._direct_refused else direct
            raise failure.with_context(
                steps=self.steps,
                trace_tail=self.world.trace.tail(),
                reproduction=self.reproduction(failure.check, expected, direct=direct),
                evidence=self.evidence(),
            )

    # -- the fault plans ------------------------------------------------------------------------------

    def run_plans(self) -> None:
        """Run the fault plans of this example's reference run (the baseline), each in a fresh world; raise a failure.

        The plans (see :mod:`pytest_kopf._plans`) of the checks that have them, at points not tried before,
        within the machine's :attr:`max_plans` per check and :attr:`plan_budget`.
        """
        kinds = plan_kinds(self.checks)
        if not kinds or self.baseline is None or self.max_plans <= 0:
            return
        self.expected()  # the baseline settled (a failure of its own is raised), its end state known
        expected = self._expected
        derived = derive(self.baseline.trace.entries, dict(kinds), skipped_steps=len(self.initial_steps))
        figures = self.statistics.plans if self.statistics is not None else {}
        for check in kinds:
            figures.setdefault(check, PlanFigures())  # reported even if none is ever derived
        pruning = type(self)._pruning or Pruning()
        users = [step for step in self.steps if step.user]
        chosen = pruning.choose(canonical(users), derived, figures, per_example=self.max_plans, budget=self.plan_budget)
        for plan in chosen:
            self.run_plan(plan, users, expected, figures.setdefault(plan.check, PlanFigures()))

    def run_plan(
        self, plan: Plan, users: Sequence[Action], expected: list[dict[str, Any]] | None, figures: PlanFigures
    ) -> None:
        """One planned run: the users' actions with the plan's fault, in a fresh world, judged by the plan's check."""
        steps = plan.steps(users)
        started = time.perf_counter()
        reference = self.reference
        world = World(self.spec(), modules=self._modules)
        try:
            failure = self._planned_verdict(world, plan, steps, expected)
            if failure is not None:
                raise self._planned_failure(failure, world, steps, expected) from None
        finally:
            figures.run += 1
            figures.faults += len(world.cluster.sim.faults.injections)
            figures.virtual_seconds += world.loop.time()
            if self.reference is reference:
                world.close()
            else:  # the reference made meanwhile (for a difference) is closed first: made last (see :meth:`close`)
                self._closed_later.append(world)
            figures.wall_seconds += time.perf_counter() - started

    def _planned_verdict(
        self, world: World, plan: Plan, steps: Sequence[Action], expected: list[dict[str, Any]] | None
    ) -> OperatorCheckFailed | None:
        """The steps of a planned run done in its world, and the verdict of the plan's check on it (its failure)."""
        try:
            outcomes = [self._planned_step(world, step) for step in [*self.initial_steps, *steps]]
        except LivelockError as exc:
            return livelocked(exc)
        except OperatorCheckFailed as exc:
            return exc
        comparable = [outcome for outcome in outcomes if outcome != "fault"] == self.outcomes
        # Its check, and convergence whatever the machine's checks (as the docs say): a fault that leaves a handler
        # retried for ever (e.g. a write that keeps failing, retried each second) changes no end state.
        checks = ["convergence", *(check for check in self.checks if check == plan.check != "convergence")]
        try:  # (a failure of the reference, if it is made now, is raised as it is: it is not this run's)
            return self._verdict(
                world,
                perturbed_first(checks, [plan.kind]),
                expected=expected if comparable else None,
                trace=world.trace,
                **self._options(),
            )
        except LivelockError as exc:
            return livelocked(exc)

    def _planned_step(self, world: World, step: Action) -> Outcome:
        world.trace.step(step.code(), restarts=step.restarts)
        outcome = self._apply_in(world, step)
        return outcome if step.user else "fault"

    def _planned_failure(
        self, failure: OperatorCheckFailed, world: World, steps: list[Action], expected: list[dict[str, Any]] | None
    ) -> OperatorCheckFailed:
        self.failed = True
        return failure.with_context(
            steps=steps,
            trace_tail=world.trace.tail(),
            reproduction=self.reproduction(failure.check, expected, steps=steps),
            evidence=self.evidence(checked=world),
        )

    def evidence(self, checked: World | None = None) -> FailureEvidence | None:
        """What a failure's report shows: both worlds' traces and end states as they are now (None if unreadable).

        ``checked``: the world that has failed, if not the machine's checked one (e.g. a planned run's).
        """
        checked = checked if checked is not None else self.world
        worlds = [checked, *([self.baseline] if self.baseline is not None else [])]
        try:
            states = [end_state(world.cluster) for world in worlds]  # all that the operator can touch
        except Exception:  # a world torn apart (e.g. its cluster stopped): the failure goes on without its report
            return None
        named = [*self.paths, *(item for item in self.manifests if isinstance(item, str | os.PathLike)), *self.logs]
        return FailureEvidence(
            checked=list(checked.trace.entries),
            baseline=list(self.baseline.trace.entries) if self.baseline is not None else None,
            checked_state=states[0],
            baseline_state=states[1] if len(states) > 1 else None,
            masking=comparison_masking(self.mask, self.noise, self._history_aside()),
            named=[os.fspath(path) for path in named if _is_file_name(path)],
            noise=described(self.noise),
        )

    def reproduction(
        self,
        check: str,
        expected: Sequence[Mapping[str, Any]] | None = None,
        *,
        steps: Sequence[Action] | None = None,
        direct: Sequence[Mapping[str, Any]] | None = None,
        seed: int = 0,
        epoch: datetime.datetime = DEFAULT_EPOCH,
    ) -> str:
        """A pytest test that replays this example's steps (or these) with the plugin's fixtures and checks the same.

        ``seed`` & ``epoch``: those of the world whose run it reproduces (as a ``kopf_seed`` marker, if not the
        default ones of the checked world and of a test).
        """
        return reproduction(
            self.spec(),
            check=check,
            steps=[*self.initial_steps, *(self.steps if steps is None else steps)],
            expected=expected,
            direct=direct,
            resources=[custom.qualified for custom in self.custom_resources()],
            mask=self.mask,
            namespace=self.namespace,
            retained=self.retained,
            consistency=self.consistency,
            noise=sorted(self.noise) if expected is not None or direct is not None or check == "rollback" else (),
            seed=seed,
            epoch=epoch,
        )


def _controllers(selection: ControllerSettings | str | Sequence[str] | bool | None) -> ControllerSettings | None:
    """The worlds' controllers: as selected, or as the test being run selects them for its ``kopf_cluster``."""
    if isinstance(selection, ControllerSettings):
        return selection
    if selection is None:
        return running_test_controllers()
    return ControllerSettings(enabled=parse_selection(selection))


async def _step(action: Action, world: World) -> Outcome:
    """One step of a machine: the action, then the operator catches up with it (as in a reproduction)."""
    outcome = await action.apply(world)
    await caught_up(world.operator)
    return outcome


def reproduction(
    spec: OperatorSpec,
    *,
    check: str,
    steps: Sequence[Action],
    resources: Sequence[str],
    expected: Sequence[Mapping[str, Any]] | None = None,
    mask: Sequence[str] = (),
    namespace: str = "default",
    direct: Sequence[Mapping[str, Any]] | None = None,
    retained: Sequence[str] = (),
    consistency: Mapping[str, str] | None = None,
    noise: Sequence[NoiseField] = (),
    seed: int = 0,
    epoch: datetime.datetime = DEFAULT_EPOCH,
) -> str:
    """The text of a runnable pytest test: the steps as code, then the check's verdict (see :func:`verify`).

    What a comparing check compares with (``expected``, ``direct``, ``noise``) is written out as made by the operator
    that failed; the operator's files changed since (e.g. fixed), a fixture makes it anew, by the operator's own run
    of the users' actions with no faults (:func:`~pytest_kopf.checks.compared_with`).
    """
    imports = dict.fromkeys(line for step in steps if isinstance(step, RuleStep) for line in step.imports())
    markers = [
        *_controllers_marker(spec.controllers),
        *(
            [f"@pytest.mark.kopf_seed({seed}, epoch_offset={(epoch - DEFAULT_EPOCH).total_seconds()!r})"]
            if (seed, epoch) != (0, DEFAULT_EPOCH)
            else []
        ),
    ]
    compares = expected is not None or direct is not None or bool(noise)
    anew = compares and bool(spec.paths) and not spec.modules and spec.registry is None  # files to tell changes by
    paths = [os.path.abspath(path) for path in spec.paths]
    lines = [
        f'"""A reproduction of the check {check!r} of pytest_kopf, shrunk to {len(steps)} step(s)."""',
        *(["import pytest", ""] if markers or anew else []),
        "from pytest_kopf.checks import NoiseField, patch_and_revert, record_creations  # noqa: F401",
        "from pytest_kopf.checks import record_trace, verify, watch_storms",
        *(["from pytest_kopf.checks import compared_with"] if anew else []),
        "from pytest_kopf.driving import caught_up, crash_after, settle, tolerate  # noqa: F401",
        *imports,
        "",
        "",
    ]
    options = [
        f"checks=[{check!r}]",
        f"resources={list(resources)!r}",
        "trace=trace",
        f"quiet={spec.quiet!r}",
        f"settle_timeout={spec.settle_timeout!r}",
    ]
    if namespace != "default":
        options.append(f"namespace={namespace!r}")
    if mask:
        options.append(f"mask={list(mask)!r}")
    if anew:
        made = [
            f"made_of={operator_digest(spec.paths, spec.manifests)!r}",
            f"expected={'EXPECTED' if expected is not None else 'None'}",
            f"direct={'DIRECT' if direct is not None else 'None'}",
            f"noise={'NOISE' if noise else '[]'}",
            f"paths={paths!r}",
            f"manifests=[{', '.join(_manifest_literal(manifest) for manifest in spec.manifests)}]",
            *options[1:2],
            *options[3:],
            *([f"retained={list(retained)!r}"] if retained else []),
            *([f"consistency={dict(consistency)!r}"] if consistency else []),
        ]
        lines.extend(
            [
                "@pytest.fixture",
                "def compared():",
                '    """What the run is compared with: EXPECTED, DIRECT and NOISE below, as the operator that failed',
                "    made them; once the operator's files are other (e.g. fixed), made anew by its own run of the",
                '    users\' actions with no faults and no crashes (users_actions below)."""',
                f"    return compared_with(users_actions, {check!r}, {', '.join(made)})",
                "",
                "",
                "async def users_actions(kopf_cluster, kopf_operator):",
                '    """The users\' actions of the steps below, without the faults and crashes."""',
                *[
                    line
                    for step in steps
                    if step.user
                    for line in (f"    {step.code()}", "    await caught_up(kopf_operator)")
                ],
                "",
                "",
            ]
        )
    lines.extend(
        [
            *markers,
            f"async def test_reproduction({'compared, ' if anew else ''}kopf_cluster, kopf_operator):",
        ]
    )
    for manifest in spec.manifests:
        lines.append(f"    await kopf_cluster.apply({_manifest_literal(manifest)})")
    start = []
    if spec.paths:
        start.append(f"paths={paths!r}")
    if spec.modules:
        start.append(f"modules={list(spec.modules)!r}")
    if spec.registry is not None:
        module = getattr(spec.registry, "__module__", "?")
        lines.append(f"    from {module} import {spec.registry.__qualname__} as make_registry  # the registry's maker")
        start.append("registry=make_registry()")
    lines.append("    trace = record_trace(kopf_cluster)")
    lines.append("    watch_storms(kopf_cluster)")
    lines.append(f"    await kopf_operator.start({', '.join(start)})")
    if check == "cleanup":
        lines.append("    created = record_creations(kopf_cluster)")
    for step in steps:  # as in the machine: each step ends when the operator has caught up with it
        lines.append(f"    {step.code()}")
        lines.append("    await caught_up(kopf_operator)")
    if expected is not None:
        options.append("expected=compared.expected" if anew else "expected=EXPECTED")
    if direct is not None:
        options.append("direct=compared.direct" if anew else "direct=DIRECT")
    if check == "cleanup":
        options.append("created=created")
        options.extend([f"retained={list(retained)!r}"] if retained else [])
    if check == "consistency" and consistency:
        options.append(f"consistency={dict(consistency)!r}")
    if noise:
        options.append("noise=compared.noise" if anew else "noise=NOISE")
    lines.append(f"    await verify(kopf_cluster, kopf_operator, {', '.join(options)})")
    if expected is not None:
        lines.extend(
            [
                "",
                "",
                "# The end state of the same user actions with no faults and no crashes (masked).",
                f"EXPECTED = {pprint.pformat(list(expected), width=110, sort_dicts=True)}",
            ]
        )
    if direct is not None:
        lines.extend(
            [
                "",
                "",
                "# The end state of the driven objects created directly in their final state (masked).",
                f"DIRECT = {pprint.pformat(list(direct), width=110, sort_dicts=True)}",
            ]
        )
    if noise:
        lines.extend(
            [
                "# The fields that differ between two runs with no faults: noise, masked in the comparisons.",
                f"NOISE = {pprint.pformat(list(noise), width=110)}",
            ]
        )
    return "\n".join(lines) + "\n"


def _controllers_marker(controllers: ControllerSettings | None) -> list[str]:
    """The marker that gives a reproduction's cluster the same built-in controllers as the worlds' (if not all)."""
    if controllers is None or controllers == ControllerSettings():
        return []
    default = ControllerSettings()
    selection = "none" if not controllers.enabled else ",".join(sorted(controllers.enabled))
    timings = "".join(
        f", {field.name}={getattr(controllers, field.name)!r}"
        for field in dataclasses.fields(ControllerSettings)
        if field.name != "enabled" and getattr(controllers, field.name) != getattr(default, field.name)
    )
    return [f"@pytest.mark.kopf_controllers({selection!r}{timings})"]


def _is_file_name(item: str | os.PathLike[str]) -> bool:
    """Whether a manifest is given as a file's path (not as the YAML text itself)."""
    text = os.fspath(item)
    return "\n" not in text and not text.lstrip().startswith("{")


def _manifest_literal(manifest: Manifests) -> str:
    if isinstance(manifest, os.PathLike) or (
        isinstance(manifest, str) and "\n" not in manifest and not manifest.lstrip().startswith("{")
    ):
        return repr(os.path.abspath(os.fspath(manifest)))
    if isinstance(manifest, str):
        return repr(manifest)
    return pprint.pformat(manifest, width=110, sort_dicts=False)
