"""Actions on a simulated cluster with an operator, and hypothesis strategies for them and their sequences.

An action is a small frozen record: it can :meth:`~Action.apply` itself to a running world (a
simulated cluster with its operator, see :class:`Driver`), and write itself as a line of a test
(:meth:`~Action.code`) that does the same with the plugin's fixtures ``kopf_cluster`` and
``kopf_operator`` -- so a shrunk failing sequence becomes a readable, runnable reproduction.

User actions (create, patch the spec, patch labels & annotations, delete, advance the time,
settle) happen in every run of a check; perturbations (API faults, stale reads, withheld events,
crashes) only in the runs that test the operator's robustness against them.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from hypothesis import strategies as st

from .._catalogue import CATALOGUE, deleting, perturbation_kinds, validate_checks
from .._oracles import attempt_patch_and_revert
from ..cluster import KopfCluster
from ..driving import Refusal, attempt, crash_after
from ..operator import KopfOperator
from .schemas import CustomResource, object_patches, objects

__all__ = [
    "PERTURBATIONS",
    "Action",
    "Advance",
    "ApiErrors",
    "CrashAfterWrites",
    "CrashRestart",
    "Create",
    "Delete",
    "Driver",
    "Outcome",
    "PatchAndRevert",
    "PatchFields",
    "PatchMeta",
    "PatchSpec",
    "Redeliver",
    "ReplayLog",
    "Settle",
    "StaleReads",
    "WithheldEvents",
    "action_sequences",
    "actions",
]

JsonDict = dict[str, Any]


class Driver(Protocol):
    """What actions act upon: a cluster, its operator, and how to let it settle."""

    @property
    def cluster(self) -> KopfCluster: ...

    @property
    def operator(self) -> KopfOperator: ...

    @property
    def restart_delay(self) -> float: ...

    async def settle(self) -> bool: ...


def _literal(value: Any) -> str:
    """A Python literal of JSON data, on one line (a step is one line of a reproduction)."""
    return repr(value)


#: What a user's action on an object came to: ``"ok"``, or the cluster's :class:`Refusal` (a no-op step);
#: None for the other steps (time passing, faults).
Outcome = str | Refusal | None


def _outcome(result: object) -> str | Refusal:
    return result if isinstance(result, Refusal) else "ok"


@dataclasses.dataclass(frozen=True)
class Action(abc.ABC):
    """One step of a sequence. ``user``: done by the users of the cluster (in every run), not a fault."""

    user: ClassVar[bool] = True
    #: The step replaces the operator by a fresh one (which knows nothing of the old one's memory).
    restarts: ClassVar[bool] = False
    #: The kind of perturbation or fault plan that the step is (None for the users' actions).
    kind: ClassVar[str | None] = None

    @abc.abstractmethod
    async def apply(self, driver: Driver) -> Outcome:
        """Do the step; its outcome for the users' actions on objects (``ok``, or the cluster's refusal)."""

    @abc.abstractmethod
    def code(self) -> str:
        """The same step as a line of a test with the plugin's fixtures."""

    def simpler(self) -> list[Action]:
        """Simpler variants of this step, the simplest first (for shrinking a failing sequence)."""
        return []

    def __str__(self) -> str:
        return self.code()


#: The fields of a spec that shrinking may leave out: the strategy that made the step makes specs without them.
#: None: any (a step written by hand); empty: none (a user's own strategy: its specs are its own to make).
Removable = frozenset[str] | None


@dataclasses.dataclass(frozen=True)
class Create(Action):
    body: JsonDict
    removable: Removable = dataclasses.field(default=None, compare=False, repr=False)

    async def apply(self, driver: Driver) -> Outcome:
        return _outcome(await attempt(driver.cluster.create(self.body)))

    def code(self) -> str:
        return f"await tolerate(kopf_cluster.create({_literal(self.body)}))"

    def simpler(self) -> list[Action]:
        """Without one of its top-level fields but ``spec``, or one of its spec's fields (if still valid)."""
        others = [key for key in self.body if key not in ("apiVersion", "kind", "metadata", "spec")]
        options: list[Action] = [Create({k: v for k, v in self.body.items() if k != key}) for key in others]
        spec = self.body.get("spec")
        if isinstance(spec, dict):
            keys = [key for key in spec if self.removable is None or key in self.removable]
            options.extend(
                dataclasses.replace(self, body={**self.body, "spec": {k: v for k, v in spec.items() if k != key}})
                for key in keys
            )
        return options


@dataclasses.dataclass(frozen=True)
class MergePatch(Action):
    """A merge patch of an object (:meth:`patch`): the base of the patching steps."""

    resource: str
    name: str

    @abc.abstractmethod
    def patch(self) -> JsonDict:
        """The merge patch that the step applies to the object."""

    async def apply(self, driver: Driver) -> Outcome:
        return _outcome(await attempt(driver.cluster.patch(self.resource, self.name, self.patch())))

    def code(self) -> str:
        return f"await tolerate(kopf_cluster.patch({self.resource!r}, {self.name!r}, {_literal(self.patch())}))"


def _without_each(values: JsonDict, removable: Removable = None) -> list[JsonDict]:
    """The mapping without one of its (``removable``) keys, for each such key (none if it has one key at most)."""
    if len(values) <= 1:
        return []
    return [{k: v for k, v in values.items() if k != key} for key in values if removable is None or key in removable]


@dataclasses.dataclass(frozen=True)
class PatchSpec(MergePatch):
    """A merge patch of the spec: new values of some fields, ``None`` for the fields removed."""

    spec: JsonDict
    removable: Removable = dataclasses.field(default=None, compare=False, repr=False)

    def patch(self) -> JsonDict:
        return {"spec": self.spec}

    def simpler(self) -> list[Action]:
        return [dataclasses.replace(self, spec=spec) for spec in _without_each(self.spec, self.removable)]


@dataclasses.dataclass(frozen=True)
class PatchFields(MergePatch):
    """A merge patch of top-level fields other than the spec (``data``, ``matchNamespace``...): ``None`` removes one."""

    fields: JsonDict

    def patch(self) -> JsonDict:
        return self.fields

    def simpler(self) -> list[Action]:
        return [PatchFields(self.resource, self.name, fields) for fields in _without_each(self.fields)]


@dataclasses.dataclass(frozen=True)
class PatchAndRevert(Action):
    """A change of an object's fields (a merge patch, e.g. a spec the operator should refuse), reverted: each once
    the operator has settled; the end states before the change and after its reversal are kept for ``rollback``."""

    resource: str
    name: str
    patch: JsonDict
    removable: Removable = dataclasses.field(default=None, compare=False, repr=False)

    async def apply(self, driver: Driver) -> Outcome:
        return _outcome(
            await attempt(
                attempt_patch_and_revert(driver.cluster, driver.operator, self.resource, self.name, self.patch)
            )
        )

    def code(self) -> str:
        return (
            f"await tolerate(patch_and_revert(kopf_cluster, kopf_operator, {self.resource!r}, {self.name!r}, "
            f"{_literal(self.patch)}))"
        )

    def simpler(self) -> list[Action]:
        spec = self.patch.get("spec")
        if not isinstance(spec, dict) or len(self.patch) > 1:
            return []
        return [dataclasses.replace(self, patch={"spec": fewer}) for fewer in _without_each(spec, self.removable)]


@dataclasses.dataclass(frozen=True)
class PatchMeta(MergePatch):
    """A merge patch of the labels & annotations (``None`` removes one)."""

    labels: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    annotations: Mapping[str, str | None] = dataclasses.field(default_factory=dict)

    def patch(self) -> JsonDict:
        metadata: JsonDict = {}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        return {"metadata": metadata}


@dataclasses.dataclass(frozen=True)
class Delete(Action):
    resource: str
    name: str

    async def apply(self, driver: Driver) -> Outcome:
        return _outcome(await attempt(driver.cluster.delete(self.resource, self.name)))

    def code(self) -> str:
        return f"await tolerate(kopf_cluster.delete({self.resource!r}, {self.name!r}))"


@dataclasses.dataclass(frozen=True)
class Advance(Action):
    """Let virtual time pass (the operator works meanwhile)."""

    seconds: float

    async def apply(self, driver: Driver) -> Outcome:
        await driver.cluster.sim.advance(self.seconds)
        return None

    def code(self) -> str:
        return f"await kopf_cluster.sim.advance({self.seconds!r})"

    def simpler(self) -> list[Action]:
        return [Advance(seconds) for seconds in (1.0, float(int(self.seconds) // 2)) if 1 <= seconds < self.seconds]


@dataclasses.dataclass(frozen=True)
class Settle(Action):
    """Wait until the operator is quiet (or the settling time is over)."""

    async def apply(self, driver: Driver) -> Outcome:
        await driver.settle()
        return None

    def code(self) -> str:
        return "await settle(kopf_cluster, kopf_operator)"


@dataclasses.dataclass(frozen=True)
class ReplayLog(Action):
    """The changes of a recorded watch-event log, written into the cluster (each once the operator is quiet).

    A recorded incident as the starting state of every example (a machine's ``initial_steps``), or as one
    of the users' actions (its ``logs``). ``until``: only the changes up to so many seconds into the log.
    A change refused as a user's action would be (404/409/410/422: e.g. its object is there already) ends the
    replay there, as a no-op.
    """

    log: str
    until: float | None = None

    async def apply(self, driver: Driver) -> Outcome:
        return _outcome(await attempt(driver.cluster.replay(self.log, speed=None, until=self.until)))

    def code(self) -> str:
        until = f", until={self.until!r}" if self.until is not None else ""
        return f"await tolerate(kopf_cluster.replay({self.log!r}, speed=None{until}))"


@dataclasses.dataclass(frozen=True)
class ApiErrors(Action):
    """The next ``count`` matching requests of the operator fail with ``code`` (429 with a Retry-After)."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "api-errors"
    code_: int
    method: str | None = None
    resource: str | None = None
    count: int = 1

    def _conflicting_methods(self) -> str | list[str]:
        """Conflicts are of updates only (a read is never one, a create's 409 means "already exists")."""
        return self.method if self.method in ("PUT", "PATCH") else ["PUT", "PATCH"]

    def _kwargs(self) -> str:
        parts = [repr(self.code_)]
        if self.code_ == 429:
            parts.append("retry_after=1")
        if self.method is not None:
            parts.append(f"method={self.method!r}")
        if self.resource is not None:
            parts.append(f"resource={self.resource!r}")
        parts.append(f"count={self.count}")
        return ", ".join(parts)

    async def apply(self, driver: Driver) -> Outcome:
        faults = driver.cluster.sim.faults
        criteria: dict[str, Any] = {"method": self.method, "resource": self.resource, "count": self.count}
        if self.code_ == 409:
            faults.conflict(preconditioned_only=True, **{**criteria, "method": self._conflicting_methods()})
        else:
            faults.error(self.code_, retry_after=1 if self.code_ == 429 else None, **criteria)
        return None

    def code(self) -> str:
        if self.code_ == 409:
            method = self._conflicting_methods()
            resource = f", resource={self.resource!r}" if self.resource is not None else ""
            return (
                f"kopf_cluster.sim.faults.conflict(preconditioned_only=True, method={method!r}{resource}, "
                f"count={self.count})"
            )
        return f"kopf_cluster.sim.faults.error({self._kwargs()})"

    def simpler(self) -> list[Action]:
        counts = sorted({1, self.count // 2, self.count - 1} - {0, self.count})
        return [dataclasses.replace(self, count=count) for count in counts]


@dataclasses.dataclass(frozen=True)
class StaleReads(Action):
    """The next ``count`` reads (get, list) are served up to ``lag`` revisions behind."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "stale-reads"
    lag: int
    count: int

    async def apply(self, driver: Driver) -> Outcome:
        driver.cluster.sim.faults.stale_read(self.lag, count=self.count)
        return None

    def code(self) -> str:
        return f"kopf_cluster.sim.faults.stale_read({self.lag}, count={self.count})"

    def simpler(self) -> list[Action]:
        counts = sorted({1, self.count // 2} - {0, self.count})
        options: list[Action] = [StaleReads(self.lag, count) for count in counts]
        return options + ([StaleReads(1, self.count)] if self.lag > 1 else [])


@dataclasses.dataclass(frozen=True)
class WithheldEvents(Action):
    """The watch streams are cut; the next ``count`` ones of a resource get their events late, or coalesced."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "withheld-events"
    resource: str
    delay: float
    coalesce: bool
    count: int = 1

    async def apply(self, driver: Driver) -> Outcome:
        driver.cluster.sim.faults.withhold_events(
            self.delay, coalesce=self.coalesce, resource=self.resource, count=self.count
        )
        driver.cluster.sim.store.close_watches()  # the operator watches again, and gets the lagging view
        return None

    def code(self) -> str:
        return (
            f"kopf_cluster.sim.faults.withhold_events({self.delay!r}, coalesce={self.coalesce!r}, "
            f"resource={self.resource!r}, count={self.count}); kopf_cluster.sim.store.close_watches()"
        )

    def simpler(self) -> list[Action]:
        options: list[Action] = []
        if self.count > 1:
            options.append(dataclasses.replace(self, count=1))
        if self.coalesce:
            options.append(dataclasses.replace(self, coalesce=False))
        if self.delay > 1:
            options.append(dataclasses.replace(self, delay=1.0))
        return options


@dataclasses.dataclass(frozen=True)
class CrashAfterWrites(Action):
    """The operator is killed right after its ``writes``-th successful write from now on, then restarted."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "crashes"
    writes: int

    async def apply(self, driver: Driver) -> Outcome:
        crash_after(driver.cluster, driver.operator, writes=self.writes, restart_delay=driver.restart_delay)
        return None

    def code(self) -> str:
        return f"crash_after(kopf_cluster, kopf_operator, writes={self.writes})"

    def simpler(self) -> list[Action]:
        return [CrashAfterWrites(writes) for writes in sorted({1, self.writes - 1} - {0, self.writes})]


@dataclasses.dataclass(frozen=True)
class CrashRestart(Action):
    """The operator is killed now (whatever it is doing), and a fresh one is started."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "crashes"
    restarts: ClassVar[bool] = True

    async def apply(self, driver: Driver) -> Outcome:
        await driver.operator.crash()
        await driver.operator.restart()
        return None

    def code(self) -> str:
        return "await kopf_operator.crash(); await kopf_operator.restart()"


@dataclasses.dataclass(frozen=True)
class Redeliver(Action):
    """The operator is restarted gracefully: a fresh one sees every object again (and resumes them)."""

    user: ClassVar[bool] = False
    kind: ClassVar[str | None] = "redeliver"
    restarts: ClassVar[bool] = True

    async def apply(self, driver: Driver) -> Outcome:
        await driver.operator.restart()
        return None

    def code(self) -> str:
        return "await kopf_operator.restart()"


#: Which perturbations each check adds to the user actions (the catalogue's, by check).
PERTURBATIONS: Mapping[str, tuple[str, ...]] = {name: check.perturbations for name, check in CATALOGUE.items()}

_LABEL_KEYS = ("app", "tier")
_LABEL_VALUES = st.one_of(st.none(), st.sampled_from(["a", "b"]))


def spec_patches(
    resource: CustomResource, spec: st.SearchStrategy[Any] | None = None, *, misuse: bool = False
) -> st.SearchStrategy[JsonDict]:
    """Merge patches of the spec that keep it valid: new values of some fields, ``None`` for optional ones.

    ``spec``: the user's strategy (its values are the patches). ``misuse``: the new values are misoperations
    (valid for the schema, but to be refused or survived: see :func:`~pytest_kopf.strategies.values.misoperations`).
    """
    if spec is not None:
        return spec.map(lambda value: value if isinstance(value, dict) else {})
    spec_schema = resource.fields.get("spec") or {}
    if spec_schema.get("properties") or isinstance(spec_schema.get("additionalProperties"), Mapping):
        return object_patches(spec_schema, misuse=misuse)
    return st.dictionaries(  # unknown fields preserved, or no schema: a few keys of any value
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.none(), st.integers(0, 9), st.sampled_from(["x", "y"])),
        min_size=1,
        max_size=2,
    )


def _optional_spec_fields(resource: CustomResource) -> Removable:
    """The spec's fields that the schema does not require (the objects drawn from it may lack them); None: any
    (a map of free keys, or no schema of its fields)."""
    spec_schema = resource.fields.get("spec") or {}
    properties = spec_schema.get("properties")
    if (
        not properties
        or spec_schema.get("additionalProperties")
        or spec_schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        return None
    required = set(spec_schema.get("required") or ())
    return frozenset(name for name in properties if name not in required)


def user_actions(
    resources: Sequence[CustomResource],
    *,
    names: Sequence[str] = ("obj-0", "obj-1"),
    namespace: str = "default",
    specs: Mapping[str, st.SearchStrategy[Any]] | None = None,
    max_advance: float = 120,
    logs: Sequence[str | os.PathLike[str]] = (),
    deletes: bool = True,
    present: Collection[tuple[str, str]] | None = None,
) -> st.SearchStrategy[Action]:
    """Create, patch the spec (or other top-level fields), patch labels & annotations, delete (if ``deletes``),
    advance the time, settle; replay the ``logs``. Objects and patches come from the CRD's whole schema (edge
    values first), now and then misoperations (valid for the schema, but to be refused or survived); a user's
    ``specs`` strategy wins for the spec.

    ``present``: the objects that exist now (``(resource, name)``, the resource as ``plural.group``), if known:
    then only those absent are created, and only those present are patched or deleted (no action wasted on
    a 404 or a 409), and a cluster with none of them gets creations twice as often.
    """
    specs = specs or {}
    choices: list[st.SearchStrategy[Action]] = []
    for resource in resources:
        spec = next((specs[alias] for alias in resource.names if alias in specs), None)
        ref = resource.qualified
        # Shrinking stays inside the strategies: a user's specs are kept whole; the schema's lose optional fields only.
        optional: Removable = frozenset() if spec is not None else _optional_spec_fields(resource)
        patchable: Removable = frozenset() if spec is not None else None
        absent = [name for name in names if present is None or (ref, name) not in present]
        there = [name for name in names if present is None or (ref, name) in present]
        if absent:
            creates = objects(resource, names=absent, namespace=namespace, spec=spec)
            if spec is None:  # now and then, a misoperation instead (its own choice: it shrinks away first)
                misused = objects(resource, names=absent, namespace=namespace, misuse=True)
                creates = st.one_of(creates, creates, creates, misused)
            created = st.builds(Create, creates, st.just(optional))
            choices.extend([created] if present is None or there else [created, created])
        if there:
            named = st.sampled_from(there)
            patches = st.builds(PatchSpec, st.just(ref), named, spec_patches(resource, spec), st.just(patchable))
            if spec is None:  # the same for the patches
                misusing = st.builds(PatchSpec, st.just(ref), named, spec_patches(resource, misuse=True))
                patches = st.one_of(patches, patches, patches, misusing)
            choices.append(patches)
            others = resource.field_patches()
            if others is not None:
                choices.append(st.builds(PatchFields, st.just(ref), named, others))
            choices.append(
                st.builds(
                    PatchMeta,
                    st.just(ref),
                    named,
                    st.dictionaries(st.sampled_from(_LABEL_KEYS), _LABEL_VALUES, min_size=1, max_size=2),
                )
            )
            if deletes:
                choices.append(st.builds(Delete, st.just(ref), named))
    advance = st.integers(1, max(1, int(max_advance))).map(lambda seconds: Advance(float(seconds)))
    choices.extend([advance, advance])  # time passing between the actions matters: twice as likely
    choices.append(st.just(Settle()))
    if logs:
        choices.append(st.sampled_from([ReplayLog(os.path.abspath(os.fspath(log))) for log in logs]))
    return st.one_of(*choices)


def perturbations(
    kinds: Sequence[str],
    resources: Sequence[CustomResource],
    *,
    names: Sequence[str] = ("obj-0", "obj-1"),
    specs: Mapping[str, st.SearchStrategy[Any]] | None = None,
) -> st.SearchStrategy[Action]:
    """The faults and crashes of the given kinds (see :data:`PERTURBATIONS`); ``reverts``: changes reverted."""
    choices: list[st.SearchStrategy[Action]] = []
    plurals = [None, *(resource.plural for resource in resources)]
    if "reverts" in kinds:
        choices.extend(reverted_changes(resource, names=names, specs=specs) for resource in resources)
    if "api-errors" in kinds:
        choices.append(
            st.builds(
                ApiErrors,
                st.sampled_from([500, 503, 429, 409]),
                st.sampled_from([None, "GET", "POST", "PATCH", "DELETE"]),
                st.sampled_from(plurals),
                st.integers(1, 5),
            )
        )  # transient: a few in a row
    if "stale-reads" in kinds:
        choices.append(st.builds(StaleReads, st.integers(1, 3), st.integers(1, 10)))
    if "withheld-events" in kinds:
        choices.append(
            st.builds(
                WithheldEvents,
                st.sampled_from([resource.plural for resource in resources]),
                st.integers(1, 60).map(float),
                st.booleans(),
                st.integers(1, 3),
            )
        )
    if "crashes" in kinds:
        # Half the time within the first few writes: most bugs of a crash are right after a handler's first write.
        choices.append(st.builds(CrashAfterWrites, st.one_of(st.integers(1, 3), st.integers(4, 12))))
        choices.append(st.just(CrashRestart()))
    if "redeliver" in kinds:
        choices.append(st.just(Redeliver()))
    return st.one_of(*choices) if choices else st.nothing()


def reverted_changes(
    resource: CustomResource,
    *,
    names: Sequence[str] = ("obj-0", "obj-1"),
    specs: Mapping[str, st.SearchStrategy[Any]] | None = None,
) -> st.SearchStrategy[Action]:
    """Changes of an object reverted (:class:`PatchAndRevert`): mostly misoperations (valid for the schema, but to be
    refused or survived), else any change; a user's ``specs`` strategy wins."""
    known = specs or {}
    spec = next((known[alias] for alias in resource.names if alias in known), None)
    if spec is not None:
        changes = spec_patches(resource, spec)
    else:
        misused = spec_patches(resource, misuse=True)
        changes = st.one_of(misused, misused, spec_patches(resource))
    patches = changes.map(lambda patch: {"spec": patch})
    others = resource.field_patches(misuse=True)
    if others is not None and spec is None:
        patches = st.one_of(patches, patches, others)
    kept: Removable = frozenset() if spec is not None else None  # a user's specs are kept whole in shrinking
    return st.builds(PatchAndRevert, st.just(resource.qualified), st.sampled_from(list(names)), patches, st.just(kept))


def actions(
    resource: str | CustomResource | Mapping[str, Any] | Sequence[CustomResource],
    *,
    manifests: Sequence[Mapping[str, Any]] = (),
    checks: Sequence[str] = ("convergence",),
    names: Sequence[str] = ("obj-0", "obj-1"),
    namespace: str = "default",
    specs: Mapping[str, st.SearchStrategy[Any]] | None = None,
    max_advance: float = 120,
    logs: Sequence[str | os.PathLike[str]] = (),
) -> st.SearchStrategy[Action]:
    """One action: a user's (always), or a perturbation for the checks given (see :data:`PERTURBATIONS`).

    ``resource``: a CRD, a :class:`~pytest_kopf.strategies.schemas.CustomResource`, several of them,
    or a name resolved in ``manifests``. ``logs``: recorded watch-event logs replayed as users' actions.
    """
    resources = _resolve(resource, manifests)
    chosen = validate_checks(checks)
    kinds = perturbation_kinds(chosen)
    users = user_actions(
        resources,
        names=names,
        namespace=namespace,
        specs=specs,
        max_advance=max_advance,
        logs=logs,
        deletes=deleting(chosen),
    )
    if not kinds:
        return users
    return mixed(users, perturbations(kinds, resources, names=names, specs=specs))


def mixed(users: st.SearchStrategy[Action], perturbing: st.SearchStrategy[Action]) -> st.SearchStrategy[Action]:
    """Mostly the users' actions, one in four a perturbation."""
    return st.one_of(users, users, users, perturbing)


def action_sequences(
    resource: str | CustomResource | Mapping[str, Any] | Sequence[CustomResource],
    *,
    max_steps: int = 20,
    min_steps: int = 1,
    **kwargs: Any,
) -> st.SearchStrategy[list[Action]]:
    """Sequences of :func:`actions`; they shrink towards fewer steps and simpler objects."""
    return st.lists(actions(resource, **kwargs), min_size=min_steps, max_size=max_steps)


def _resolve(
    resource: str | CustomResource | Mapping[str, Any] | Sequence[CustomResource],
    manifests: Sequence[Mapping[str, Any]],
) -> list[CustomResource]:
    from .schemas import resources_in

    if isinstance(resource, CustomResource):
        return [resource]
    if isinstance(resource, Mapping):
        return [CustomResource.from_crd(resource)]
    if isinstance(resource, str):
        found = [custom for custom in resources_in(manifests) if resource in custom.names]
        if not found:
            known = sorted(custom.qualified for custom in resources_in(manifests))
            raise ValueError(
                f"No CRD among the manifests defines the resource {resource!r}; "
                f"they define: {', '.join(known) or 'none'}."
            )
        return found[:1]
    return list(resource)


def describe(steps: Sequence[Action]) -> str:
    """The steps as numbered lines (for the failures' messages)."""
    return "\n".join(f"  {index}. {step.code()}" for index, step in enumerate(steps, 1))


def canonical(steps: Sequence[Action]) -> str:
    """The steps as JSON-ish text, the same for the same steps (e.g. to compare two runs' inputs)."""
    return json.dumps([[type(step).__name__, dataclasses.asdict(step)] for step in steps], sort_keys=True, default=str)
