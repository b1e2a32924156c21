"""From a log's watch events to the writes that replay them: creates, updates and deletes of each object.

A replay writes what the world did to the objects, not what the apiserver or the recorded operator
did: the server's own fields (uid, resourceVersion, timestamps, generation, managedFields) are left
to the target cluster, and the operator's bookkeeping (:class:`Bookkeeping`: for Kopf, its
annotations, its finalizer and its progress in the status) is left to the operator under test,
which writes its own. Each update is the difference between the object's previous logged state
and its new one, applied as a JSON merge patch, so that what the operator under test wrote
meanwhile stays; finalizers are added and removed one by one for the same reason.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.recording.apiclient import MERGE_PATCH, Api, ApiFailure, Discovery, Served
from kopf_sim.recording.eventlog import LogEvent

__all__ = ["KOPF_BOOKKEEPING", "Bookkeeping", "ObjectView", "ReplayStep", "StepWriter", "merge_diff", "plan_steps"]

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
NAMESPACES = ("", "namespaces")
SERVER_STATUS = frozenset({CRDS, NAMESPACES})  # the apiserver writes their status itself
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "generateName",
)
_CONFLICT_RETRIES = 10


@dataclasses.dataclass(frozen=True)
class Bookkeeping:
    """What the recorded operator wrote for itself, and a replay leaves out (the operator under test writes its own)."""

    annotation_prefixes: tuple[str, ...] = ()
    finalizers: tuple[str, ...] = ()
    status_fields: tuple[str, ...] = ()

    def keeps_annotation(self, key: str) -> bool:
        return not key.startswith(self.annotation_prefixes) if self.annotation_prefixes else True


#: What an operator made with Kopf (the framework this simulator is made to test) keeps in its objects.
KOPF_BOOKKEEPING = Bookkeeping(
    annotation_prefixes=("kopf.zalando.org/",),
    finalizers=("kopf.zalando.org/KopfFinalizerMarker",),
    status_fields=("kopf",),
)


@dataclasses.dataclass(frozen=True)
class ObjectView:
    """What a replay writes of one logged state of an object."""

    main: JsonDict  # apiVersion, kind, metadata (names, labels, annotations, owners), spec & the rest
    status: Any  # None when the state has no status
    finalizers: tuple[str, ...]
    deleting: bool  # the logged state has a deletionTimestamp
    uid: str

    @classmethod
    def of(cls, obj: JsonDict, bookkeeping: Bookkeeping, namespace: str | None) -> ObjectView:
        metadata = meta(obj)
        kept = {
            key: clone(value) for key, value in metadata.items() if key not in _SERVER_METADATA and key != "finalizers"
        }
        if namespace is not None:
            kept["namespace"] = namespace
        else:
            kept.pop("namespace", None)
        annotations = {
            key: value
            for key, value in (kept.pop("annotations", None) or {}).items()
            if bookkeeping.keeps_annotation(key)
        }
        if annotations:
            kept["annotations"] = annotations
        main = {key: clone(value) for key, value in obj.items() if key not in ("metadata", "status")}
        main["metadata"] = kept
        status = obj.get("status")
        if isinstance(status, dict) and bookkeeping.status_fields:
            status = {key: clone(value) for key, value in status.items() if key not in bookkeeping.status_fields}
        finalizers = tuple(f for f in metadata.get("finalizers") or () if f not in bookkeeping.finalizers)
        return cls(
            main=main,
            status=clone(status) if status not in (None, {}) else None,
            finalizers=finalizers,
            deleting=bool(metadata.get("deletionTimestamp")),
            uid=str(metadata.get("uid") or ""),
        )


@dataclasses.dataclass(frozen=True)
class ReplayStep:
    """One change of one object, as a replay writes it: ``create``, ``update`` or ``delete``.

    ``event`` is the log's event (its ``where`` names the file and line; its ``t`` the time).
    For updates and deletes, ``patch`` and ``status_patch`` are JSON merge patches from the
    object's previous logged state, and the finalizers are the ones added and removed.
    """

    event: LogEvent
    action: str
    resource: Served
    namespace: str | None
    name: str
    view: ObjectView
    patch: JsonDict | None = None
    status_patch: Any = None
    finalizers_added: tuple[str, ...] = ()
    finalizers_removed: tuple[str, ...] = ()
    delete: bool = False  # request the deletion (an update may start one, as a delete does)

    @property
    def t(self) -> float:
        return float(self.event.t)

    @property
    def where(self) -> str:
        return str(self.event.where)

    @property
    def changes_nothing(self) -> bool:
        """Whether writing the step would change nothing (the log's change was in fields the replay leaves alone)."""
        return (
            self.patch is None
            and self.status_patch is None
            and not self.finalizers_added
            and not self.finalizers_removed
            and not self.delete
        )

    def describe(self) -> str:
        place = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.action} {self.resource.qualified} {place}"


def merge_diff(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``; None when they are equal.

    Lists are replaced as a whole, as merge patches do; a value that becomes ``null`` cannot be
    told apart from a removed one (a limit of the format).
    """
    if old == new:
        return None
    if not isinstance(old, dict) or not isinstance(new, dict):
        return clone(new)
    patch: JsonDict = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old:
            patch[key] = clone(value)
        elif old[key] != value:
            patch[key] = merge_diff(old[key], value)
    return patch


def plan_steps(
    events: Iterable[LogEvent],
    served: Mapping[tuple[str, str, str], Served],
    *,
    bookkeeping: Bookkeeping,
    namespace: str | None = None,
) -> tuple[list[ReplayStep], list[tuple[LogEvent, str]]]:
    """The steps that replay the events (ADDED/MODIFIED/DELETED), and the events that change nothing, with why.

    Each object is followed by its resource, namespace and name; an ``ADDED`` of an object that
    exists already and a ``MODIFIED`` of one never seen are taken for what they mean (a state),
    so that a log that starts late or repeats itself (a relist) still replays cleanly.
    ``namespace``: put every namespaced object into this namespace (and replay no namespaces).
    """
    planner = _Planner(served, bookkeeping, namespace)
    for event in events:
        planner.add(event)
    return planner.steps, planner.skipped


class _Planner:
    """Follows each object through the log: alive or not, being deleted or not, its last replayable state."""

    def __init__(
        self, served: Mapping[tuple[str, str, str], Served], bookkeeping: Bookkeeping, namespace: str | None
    ) -> None:
        self.served = served
        self.bookkeeping = bookkeeping
        self.namespace = namespace
        self.steps: list[ReplayStep] = []
        self.skipped: list[tuple[LogEvent, str]] = []
        self.alive: dict[tuple[str, str, str, str], ObjectView] = {}
        self.deleting: set[tuple[str, str, str, str]] = set()

    def add(self, event: LogEvent) -> None:
        info = self.served[(event.resource.group, event.resource.version, event.resource.plural)]
        if self.namespace is not None and (info.group, info.plural) == NAMESPACES:
            self.skipped.append((event, f"namespaces are not replayed into the namespace {self.namespace!r}"))
            return
        metadata = meta(event.object)
        logged_namespace = str(metadata.get("namespace") or "") if info.namespaced else ""
        target_namespace = (self.namespace or logged_namespace) if info.namespaced else None
        key = (info.group, info.plural, logged_namespace, str(metadata["name"]))
        view = ObjectView.of(event.object, self.bookkeeping, target_namespace)
        if (info.group, info.plural) in SERVER_STATUS:
            view = dataclasses.replace(view, status=None)
        previous = self.alive.get(key)

        def step(action: str, **changes: Any) -> ReplayStep:
            return ReplayStep(event, action, info, target_namespace, key[3], view, **changes)

        if previous is not None and view.uid and previous.uid and view.uid != previous.uid:
            # Another object of the same name: the recorder missed the deletion of the previous one.
            self.steps.append(step("delete", delete=key not in self.deleting))
            previous = None
            self._forget(key)
        if previous is None:
            self._appeared(event, key, view, step)
        else:
            self._changed(event, key, previous, view, step)

    def _appeared(
        self, event: LogEvent, key: tuple[str, str, str, str], view: ObjectView, step: Callable[..., ReplayStep]
    ) -> None:
        """An object not alive in the replay so far: created (in its logged state), unless it is a deletion."""
        if event.type == "DELETED":
            self.skipped.append((event, "the deletion of an object that the replay did not create"))
            return
        self.steps.append(step("create", status_patch=view.status, delete=view.deleting))
        self._remember(key, view)

    def _changed(
        self,
        event: LogEvent,
        key: tuple[str, str, str, str],
        previous: ObjectView,
        view: ObjectView,
        step: Callable[..., ReplayStep],
    ) -> None:
        """An object alive in the replay: updated (or its deletion started) by the difference of its two states."""
        deleted = event.type == "DELETED"
        start_deletion = (deleted or view.deleting) and key not in self.deleting
        update = step(
            "delete" if start_deletion or deleted else "update",
            patch=merge_diff(previous.main, view.main),
            status_patch=merge_diff(previous.status or {}, view.status or {}),
            finalizers_added=tuple(f for f in view.finalizers if f not in previous.finalizers),
            finalizers_removed=tuple(f for f in previous.finalizers if f not in view.finalizers),
            delete=start_deletion,
        )
        if deleted:
            self._forget(key)
        else:
            self._remember(key, view)
        if update.changes_nothing:
            self.skipped.append((event, "no change but in the server's and the operator's own fields"))
        else:
            self.steps.append(update)

    def _remember(self, key: tuple[str, str, str, str], view: ObjectView) -> None:
        self.alive[key] = view
        if view.deleting:
            self.deleting.add(key)

    def _forget(self, key: tuple[str, str, str, str]) -> None:
        self.alive.pop(key, None)
        self.deleting.discard(key)


class StepWriter:
    """Writes replay steps into a cluster through its API; follows uids from the log to the cluster's own.

    ``gone_timeout``: how long a create waits for an older object of the same name to go away (its
    finalizers still held it, e.g. the operator under test was slower than the recorded one).
    """

    def __init__(
        self,
        api: Api,
        discovery: Discovery,
        *,
        gone_timeout: float = 60.0,
        on_create: Callable[[Served, JsonDict], None] | None = None,
    ) -> None:
        self.api = api
        self.discovery = discovery
        self.gone_timeout = gone_timeout
        self.on_create = on_create
        self.uids: dict[str, str] = {}  # uids in the log -> uids in the target cluster

    async def write(self, step: ReplayStep) -> None:
        if step.action == "create":
            await self._create(step)
        else:
            await self._update(step)
        if step.delete:
            await self._delete(step)

    # -- the three kinds of writes ---------------------------------------------------------------

    async def _create(self, step: ReplayStep) -> None:
        info, body = step.resource, self._body(step.view.main)
        if step.view.finalizers:
            body["metadata"]["finalizers"] = list(step.view.finalizers)
        if step.view.status is not None and not info.has_status:
            body["status"] = clone(step.view.status)
        answer = await self._post(step, body)
        if answer is None:
            await self._update(step, view_as_patch=True)  # the object is there already: only update it
            return
        self._created(step, answer)
        if step.view.status is not None and info.has_status:
            await self._patch(step, {"status": clone(step.view.status)}, subresource="status")
        if (info.group, info.plural) == CRDS:
            await self._await_served(answer)

    async def _post(self, step: ReplayStep, body: JsonDict) -> JsonDict | None:
        """Create the object (and its namespace if missing); None if it exists (and is not being deleted).

        An older object of the same name that finalizers still hold is waited for, up to ``gone_timeout``.
        """
        path = step.resource.path(step.namespace)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.gone_timeout
        made_namespace = False
        while True:
            code, answer = await self.api("POST", path, body=body)
            if code < 400:
                return answer if isinstance(answer, dict) else {}
            if code == 404 and step.namespace and not made_namespace and _names_namespace(answer, step.namespace):
                await self._ensure_namespace(step.namespace)
                made_namespace = True
                continue
            if code != 409 or _reason(answer) != "AlreadyExists":
                raise ApiFailure("POST", path, code, answer)
            current = await self._get(step)
            if current is not None and not meta(current).get("deletionTimestamp"):
                return None
            if current is not None and loop.time() >= deadline:
                raise ApiFailure(
                    "POST",
                    path,
                    code,
                    {
                        "reason": "AlreadyExists",
                        "message": f"the previous {step.name!r} is still being deleted "
                        f"after {self.gone_timeout} s (finalizers: {meta(current).get('finalizers')})",
                    },
                )
            await asyncio.sleep(0.1)

    async def _update(self, step: ReplayStep, *, view_as_patch: bool = False) -> None:
        """Write the step's difference; the object's creation if it is not there (the log began after it)."""
        info = step.resource
        main = self._body(step.view.main) if view_as_patch else step.patch
        main = self._remap_owners(main) if main is not None else None
        status = step.view.status if view_as_patch else step.status_patch
        if status is not None and not info.has_status:
            main, status = {**(main or {}), "status": status}, None
        added = step.view.finalizers if view_as_patch else step.finalizers_added
        removed = () if view_as_patch else step.finalizers_removed
        written: JsonDict | None = {}
        if added or removed:
            written = await self._patch_finalizers(step, main, added, removed)
        elif main is not None:
            written = await self._patch(step, main)
        if written is not None and status is not None:
            written = await self._patch(step, {"status": status}, subresource="status")
        if written is None and step.event.type != "DELETED":
            await self._create(step)
            return
        if (info.group, info.plural) == CRDS and main is not None:
            self.discovery.forget()

    async def _delete(self, step: ReplayStep) -> None:
        path = step.resource.path(step.namespace, step.name)
        code, answer = await self.api("DELETE", path)
        if code >= 400 and code != 404:
            raise ApiFailure("DELETE", path, code, answer)
        if (step.resource.group, step.resource.plural) == CRDS:
            self.discovery.forget()

    # -- helpers ---------------------------------------------------------------------------------

    def _body(self, main: JsonDict) -> JsonDict:
        body = self._remap_owners(clone(main))
        if body["metadata"].get("ownerReferences", ()) is None:
            del body["metadata"]["ownerReferences"]
        return body

    def _remap_owners(self, patch: JsonDict) -> JsonDict:
        """Owner references point to the target cluster's uids; owners that the replay never made are dropped
        (the garbage collector would delete the object for an owner that does not exist)."""
        refs = (patch.get("metadata") or {}).get("ownerReferences")
        if not refs:
            return patch
        mapped = [{**ref, "uid": self.uids[ref.get("uid")]} for ref in refs if ref.get("uid") in self.uids]
        return {**patch, "metadata": {**patch["metadata"], "ownerReferences": mapped or None}}

    def _created(self, step: ReplayStep, answer: Any) -> None:
        uid = meta(answer).get("uid") if isinstance(answer, dict) else None
        if step.view.uid and uid:
            self.uids[step.view.uid] = str(uid)
        if self.on_create is not None and isinstance(answer, dict):
            self.on_create(step.resource, answer)

    async def _get(self, step: ReplayStep) -> JsonDict | None:
        path = step.resource.path(step.namespace, step.name)
        code, answer = await self.api("GET", path)
        if code == 404:
            return None
        if code >= 400:
            raise ApiFailure("GET", path, code, answer)
        return answer if isinstance(answer, dict) else None

    async def _patch(self, step: ReplayStep, patch: JsonDict, *, subresource: str | None = None) -> JsonDict | None:
        """Merge-patch the object; None if it does not exist."""
        path = step.resource.path(step.namespace, step.name, subresource)
        code, answer = await self.api("PATCH", path, body=patch, content_type=MERGE_PATCH)
        if code == 404 and _reason(answer) == "NotFound":
            return None
        if code >= 400:
            raise ApiFailure("PATCH", path, code, answer)
        return answer if isinstance(answer, dict) else {}

    async def _patch_finalizers(
        self, step: ReplayStep, patch: JsonDict | None, added: Iterable[str], removed: Iterable[str]
    ) -> JsonDict | None:
        """Merge-patch the object, its finalizers added and removed one by one (the operator under test has its
        own): read, then write at that version, again on a conflict. None if the object does not exist."""
        path = step.resource.path(step.namespace, step.name)
        for _ in range(_CONFLICT_RETRIES):
            current = await self._get(step)
            if current is None:
                return None
            had = list(meta(current).get("finalizers") or ())
            finalizers = [f for f in had if f not in removed] + [f for f in added if f not in had]
            if finalizers == had:
                return current if patch is None else await self._patch(step, patch)
            metadata = {
                **((patch or {}).get("metadata") or {}),
                "finalizers": finalizers or None,
                "resourceVersion": meta(current).get("resourceVersion"),
            }
            code, answer = await self.api(
                "PATCH", path, body={**(patch or {}), "metadata": metadata}, content_type=MERGE_PATCH
            )
            if code == 409 and _reason(answer) == "Conflict":
                continue
            if code == 404 and _reason(answer) == "NotFound":
                return None
            if code >= 400:
                raise ApiFailure("PATCH", path, code, answer)
            return answer if isinstance(answer, dict) else {}
        raise ApiFailure("PATCH", path, 409, {"reason": "Conflict", "message": "the object kept changing meanwhile"})

    async def _ensure_namespace(self, namespace: str) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        code, answer = await self.api("POST", "/api/v1/namespaces", body=body)
        if code >= 400 and _reason(answer) != "AlreadyExists":
            raise ApiFailure("POST", "/api/v1/namespaces", code, answer)

    async def _await_served(self, crd: JsonDict) -> None:
        """Wait until a new CRD's resource is served (at once in the simulator; soon in a real cluster)."""
        spec = crd.get("spec") or {}
        group, plural = str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or "")
        versions = [str(v.get("name")) for v in spec.get("versions") or () if v.get("served", True)]
        async with asyncio.timeout(self.gone_timeout):
            while True:
                self.discovery.forget()
                if all([await self.discovery.served(group, version, plural) for version in versions]):
                    return
                await asyncio.sleep(0.1)


def _reason(answer: Any) -> str:
    return str(answer.get("reason") or "") if isinstance(answer, dict) else ""


def _names_namespace(answer: Any, namespace: str) -> bool:
    """Whether a 404 is about the namespace (not the resource): then the replay creates the namespace."""
    details = answer.get("details") if isinstance(answer, dict) else None
    return isinstance(details, dict) and details.get("kind") == "namespaces" and details.get("name") == namespace
