"""The one write pipeline: every write is prepared, admitted and committed here, as in the apiserver.

A write request (a create, an update, a patch of any kind, a server-side apply, a delete, a deletecollection,
their ``status`` and ``scale`` subresources, dry runs) becomes a ``Write``: how its next state follows
from the current one (the pure rules of :mod:`kopf_sim.writes`), and what admission sees of the two. Then:

0. **authorize** it (nothing by default: the simulator serves everyone as a cluster admin; an authorizer such
   as RBAC goes into ``AdmissionControl.authorizers``);
1. **prepare** the new object from the current one (nothing is stored);
2. **admit** it (:mod:`kopf_sim.admission`): mutating webhooks, the server's rules again on what they changed
   (schema defaulting, pruning, validation), validating webhooks (admission policies would go before them);
3. **commit** it if the stored object is still the one it was prepared from (the optimistic-concurrency
   check); otherwise go back to 1 with the fresh state, as the apiserver's update loop does.

The HTTP layer and the built-in controllers await these writes; loaders and tests may run them synchronously
(:func:`run_now`) when no webhook is to be called.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from typing import Any, Protocol, TypedDict, TypeVar, Unpack

from kopf_sim.admission.attributes import Attributes
from kopf_sim.admission.control import AdmissionControl
from kopf_sim.admission.dispatching import synchronous_writes
from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.kube.resources import ResourceType
from kopf_sim.kube.selectors import FieldSelector, LabelSelector
from kopf_sim.store import lifecycle
from kopf_sim.writes import preparing, scales

__all__ = [
    "CollectionOptions",
    "DeleteOptions",
    "PatchOptions",
    "RequestOptions",
    "WriteOptions",
    "WritePipeline",
    "run_now",
]

T = TypeVar("T")

#: How often a write is prepared and admitted again when the object changed meanwhile, before a 409.
MAX_ATTEMPTS = 5
#: What mutating webhooks do not see of an object being created: the store fills these in after them.
_CREATE_HIDDEN = ("uid", "creationTimestamp", "generation", "resourceVersion", "managedFields")


class RequestOptions(TypedDict, total=False):
    """The options of a create or an update, as the request gives them (checked by :mod:`kopf_sim.writes.options`)."""

    dry_run: bool
    manager: str | None
    field_validation: str


class WriteOptions(RequestOptions, total=False):
    warnings: list[str] | None  # where the write's warnings go (sent as ``Warning`` headers)


class RuleOptions(TypedDict):
    manager: str | None
    field_validation: str
    warnings: list[str]


class DeleteOptions(TypedDict, total=False):
    dry_run: bool
    warnings: list[str] | None


class CollectionOptions(DeleteOptions, total=False):
    labels: LabelSelector | None
    fields: FieldSelector | None
    options: Mapping[str, Any] | None  # the DeleteOptions of each deletion


class PatchOptions(WriteOptions, total=False):
    force: bool  # a server-side apply takes over the fields of other managers


class Store(lifecycle.Store, Protocol):
    """What the pipeline needs of the store: its reads, and its commits (the store passes itself)."""

    @property
    def rv(self) -> int: ...

    def commit_new(self, rtype: ResourceType, new: JsonDict, *, limit_size: bool = False) -> JsonDict: ...

    def list(
        self,
        rtype: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
    ) -> JsonDict: ...


_OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class Write(abc.ABC):
    """One write request: its next state from the current one, how admission sees it, and how it is stored.

    The defaults are those of a change of an existing object; the kinds of writes change what differs.
    """

    verb = "update"  # what authorization is asked for (the HTTP verb's name in the API: create, patch, ...)
    kind: tuple[str, str, str] | None = None  # the kind admission sees, if not the resource's own

    def __init__(
        self,
        store: Store,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        manager: str | None = None,
        field_validation: str = "",
        warnings: list[str] | None = None,
    ) -> None:
        self.store = store
        self.rtype = rtype
        self.namespace = namespace
        self.name = name
        self.subresource = subresource
        self.dry_run = dry_run
        self.manager = manager
        self.field_validation = field_validation
        self.warnings: list[str] = warnings if warnings is not None else []

    # -- Preparing -----------------------------------------------------------------------------------

    @property
    def rules(self) -> RuleOptions:
        """What the server's write rules take of the request's options (:mod:`kopf_sim.writes.preparing`)."""
        return RuleOptions(manager=self.manager, field_validation=self.field_validation, warnings=self.warnings)

    def current(self) -> JsonDict | None:
        """The object as stored now (never changed in place); a 404 if there is none."""
        obj = self.stored()
        if obj is None:
            raise errors.not_found(self.rtype.plural, self.rtype.group, self.name)
        return obj

    def stored(self) -> JsonDict | None:
        return self.store.peek(self.rtype.storage_key, self.namespace, self.name)

    @abc.abstractmethod
    def prepare(self, current: JsonDict | None) -> JsonDict | None:
        """The next state, by the server's rules (pure: nothing is stored); None for a deletion."""

    def unchanged(self, current: JsonDict | None) -> bool:
        """Whether the stored object is still the one this write was prepared from (the concurrency check)."""
        return self.stored() is current

    # -- Admitting -----------------------------------------------------------------------------------

    def attributes(self, current: JsonDict | None, new: JsonDict | None) -> Attributes:
        """The request as admission sees it (the options as of its operation, as the apiserver converts them)."""
        operation = self.operation(current)
        options: JsonDict = {"kind": _OPTIONS_KINDS[operation], "apiVersion": "meta.k8s.io/v1"}
        if self.manager:
            options["fieldManager"] = self.manager
        if self.dry_run:
            options["dryRun"] = ["All"]
        options.update(self.request_options())
        return Attributes(
            self.rtype,
            operation,
            self.namespace,
            self.request_name(new),
            self.subresource,
            self.dry_run,
            options,
            kind=self.kind,
        )

    def operation(self, current: JsonDict | None) -> str:
        return "UPDATE"

    def request_name(self, new: JsonDict | None) -> str:
        return self.name

    def request_options(self) -> JsonDict:
        return {}

    def view(self, obj: JsonDict) -> JsonDict:
        """An object as admission sees it: as served at the requested version."""
        return self.store.present(obj, self.rtype)

    def mutable_view(self, new: JsonDict, current: JsonDict | None) -> JsonDict:
        """The new object as mutating webhooks get it (a copy: their patches apply to it)."""
        view: JsonDict = clone(self.view(new))
        if current is None:  # a new object is seen as sent: before the store gives it its uid and time
            for field in _CREATE_HIDDEN:
                view["metadata"].pop(field, None)
        return view

    def revise(self, new: JsonDict, mutated: JsonDict, current: JsonDict | None) -> JsonDict:
        """The new object after mutating webhooks changed its view: the server's rules applied again."""
        return preparing.after_mutation(self.store, self.rtype, new, mutated, current, subresource=self.subresource)

    # -- Committing ----------------------------------------------------------------------------------

    def commit(self, current: JsonDict | None, new: JsonDict | None) -> JsonDict:
        assert current is not None and new is not None
        return self.store.replace(self.rtype, current, new, dry_run=self.dry_run, limit_size=True)

    def store_new(self, new: JsonDict) -> JsonDict:
        """Store a new object (a dry run only checks that it could be stored)."""
        if self.dry_run:
            preparing.check_size(new)
            return new
        return self.store.commit_new(self.rtype, new, limit_size=True)

    def result(self, stored: JsonDict) -> JsonDict:
        """What the client gets back: the object as served at the requested version."""
        return self.store.present(stored, self.rtype)


class Update(Write):
    """A PUT of a whole object (or of its ``status``)."""

    def __init__(
        self, store: Store, rtype: ResourceType, namespace: str | None, name: str, body: Any, **options: Any
    ) -> None:
        super().__init__(store, rtype, namespace, name, **options)
        self.body = body

    def prepare(self, current: JsonDict | None) -> JsonDict:
        assert current is not None
        return preparing.prepare_update(
            self.store, self.rtype, current, self.body, subresource=self.subresource, **self.rules
        )


class Create(Write):
    """A create (POST): the object is new, its name maybe generated; a taken name is a 409 at the commit."""

    verb = "create"

    def __init__(
        self,
        store: Store,
        rtype: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        copied: bool = False,
        **options: Any,
    ) -> None:
        named = isinstance(body, dict) and isinstance(body.get("metadata"), dict) and body["metadata"].get("name")
        super().__init__(store, rtype, namespace, str(named or ""), **options)
        self.body = body
        self.copied = copied  # the body is the write's own (e.g. a manifest's document): changed, not copied

    def current(self) -> JsonDict | None:
        return None

    def unchanged(self, current: JsonDict | None) -> bool:
        return True  # nothing to compare: the commit refuses a name that is taken meanwhile

    def prepare(self, current: JsonDict | None) -> JsonDict:
        return preparing.prepare_create(
            self.store,
            self.rtype,
            self.namespace,
            self.body,
            copied=self.copied,
            manager=self.manager,  # (the rules' options without a dict made for them: a load makes many creates)
            field_validation=self.field_validation,
            warnings=self.warnings,
        )

    def operation(self, current: JsonDict | None) -> str:
        return "CREATE"

    def mutable_view(self, new: JsonDict, current: JsonDict | None) -> JsonDict:
        view = super().mutable_view(new, current)
        if not self.name:  # a generated name is given by the store, after the mutating webhooks
            view["metadata"].pop("name", None)
        return view

    def commit(self, current: JsonDict | None, new: JsonDict | None) -> JsonDict:
        assert new is not None
        return self.store_new(new)


class Patch(Write):
    """A PATCH of any kind; a server-side apply to a missing object creates it (then admitted as a CREATE)."""

    verb = "patch"

    def __init__(
        self,
        store: Store,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        content_type: str,
        *,
        force: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(store, rtype, namespace, name, **options)
        self.patch = patch
        self.content_type = content_type
        self.force = force

    @property
    def creates(self) -> bool:
        return self.content_type == preparing.APPLY_PATCH and self.subresource is None

    def current(self) -> JsonDict | None:
        return self.stored() if self.creates else super().current()

    def prepare(self, current: JsonDict | None) -> JsonDict:
        if current is None:
            return preparing.prepare_apply_create(
                self.store, self.rtype, self.namespace, self.name, self.patch, **self.rules
            )
        return preparing.prepare_patch(
            self.store,
            self.rtype,
            current,
            self.patch,
            self.content_type,
            subresource=self.subresource,
            force=self.force,
            **self.rules,
        )

    def operation(self, current: JsonDict | None) -> str:
        return "UPDATE" if current is not None else "CREATE"

    def commit(self, current: JsonDict | None, new: JsonDict | None) -> JsonDict:
        if current is None:
            assert new is not None
            return self.store_new(new)
        return super().commit(current, new)


class ScaleWrite(Write):
    """A write of the ``scale`` subresource: the replicas of the object, from a Scale or a patch of its Scale.

    Admission sees ``autoscaling/v1 Scale`` objects (the old one and the requested one), as in the apiserver.
    """

    kind = scales.SCALE_KIND

    def __init__(
        self,
        store: Store,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        requested: Callable[[JsonDict], Any],
        *,
        verb: str,
        **options: Any,
    ) -> None:
        super().__init__(store, rtype, namespace, name, subresource="scale", **options)
        self.requested = requested  # the Scale asked for, from the current one (a PUT ignores it; a PATCH not)
        self.verb = verb

    def prepare(self, current: JsonDict | None) -> JsonDict:
        assert current is not None
        return self._scaled(current, self.requested(self.view(current)))

    def _scaled(self, current: JsonDict, scale: Any) -> JsonDict:
        scales.check_scale(scale, self.name)
        body = scales.with_scale(self.rtype, self.store.present(current, self.rtype), scale)
        return preparing.prepare_update(
            self.store, self.rtype, current, body, subresource="scale", copied=True, **self.rules
        )

    def view(self, obj: JsonDict) -> JsonDict:
        return scales.scale_of(self.rtype, self.store.present(obj, self.rtype))

    def revise(self, new: JsonDict, mutated: JsonDict, current: JsonDict | None) -> JsonDict:
        assert current is not None
        return self._scaled(current, mutated)

    def result(self, stored: JsonDict) -> JsonDict:
        return self.view(stored)


class Delete(Write):
    """A DELETE: admitted with the current object as the old one; finalizers, grace and GC at the commit.

    The items of a collection deletion are admitted with no name, as the apiserver admits them.
    """

    verb = "delete"

    def __init__(
        self,
        store: Store,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        options: Mapping[str, Any],
        *,
        in_collection: bool = False,
        **write_options: Any,
    ) -> None:
        super().__init__(store, rtype, namespace, name, **write_options)
        self.options = options
        self.in_collection = in_collection

    def prepare(self, current: JsonDict | None) -> None:
        return None  # what a deletion does depends on the finalizers when it is committed

    def operation(self, current: JsonDict | None) -> str:
        return "DELETE"

    def request_name(self, new: JsonDict | None) -> str:
        return "" if self.in_collection else self.name

    def request_options(self) -> JsonDict:
        return dict(self.options)

    def commit(self, current: JsonDict | None, new: JsonDict | None) -> JsonDict:
        assert current is not None
        return lifecycle.delete(
            self.store, self.rtype, current, self.options, dry_run=self.dry_run, as_status=not self.in_collection
        )

    def result(self, stored: JsonDict) -> JsonDict:
        return stored if stored.get("kind") == "Status" else super().result(stored)


class WritePipeline:
    """The writes of one store, each prepared, admitted and committed (see the module's docstring)."""

    def __init__(self, store: Store, admission: AdmissionControl) -> None:
        self.store = store
        self.admission = admission

    async def create(
        self,
        rtype: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        copied: bool = False,
        **options: Unpack[WriteOptions],
    ) -> JsonDict:
        """Create an object; ``copied``: the body is the caller's to give away (it is changed and stored)."""
        return await self.run(Create(self.store, rtype, namespace, body, copied=copied, **options))

    def create_now(
        self,
        rtype: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        copied: bool = False,
        **options: Unpack[WriteOptions],
    ) -> JsonDict:
        """:meth:`create`, synchronously (loaders, tests): possible while it calls no webhook."""
        return self.run_now(Create(self.store, rtype, namespace, body, copied=copied, **options))

    def create_each_now(
        self, creates: Iterable[tuple[ResourceType, str | None, Any]], *, copied: bool = False
    ) -> Iterator[JsonDict]:
        """:meth:`create_now` of each (a load's objects), one at a time; what the creates return.

        Whether anything authorizes or admits them is asked once, and again only after an object of a kind that
        configures admission (a webhook configuration, a policy binding): the rest are prepared and committed at
        once, as :meth:`run_now` commits a write that nothing admits (a load makes a hundred thousand of them).
        """
        configuring = self.admission.configured_by()
        admitted: bool | None = None
        store = self.store
        for rtype, namespace, body in creates:
            if admitted is None:
                admitted = bool(self.admission.authorizers) or self.admission.active()
            if admitted:
                yield self.run_now(Create(store, rtype, namespace, body, copied=copied))
            else:  # (as Create's prepare and commit, without its options: a load has none)
                new = preparing.prepare_create(store, rtype, namespace, body, copied=copied)
                yield store.present(store.commit_new(rtype, new, limit_size=True), rtype)
            if rtype.storage_key in configuring:
                admitted = None

    async def update(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> JsonDict:
        if subresource == "scale":
            write: Write = ScaleWrite(self.store, rtype, namespace, name, lambda _: body, verb="update", **options)
            return await self.run(write)
        write = Update(self.store, rtype, namespace, name, body, subresource=subresource, **options)
        return await self.run(write)

    async def patch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        content_type: str,
        *,
        subresource: str | None = None,
        **options: Unpack[PatchOptions],
    ) -> JsonDict:
        if subresource == "scale":
            options.pop("force", None)
            options.pop("field_validation", None)

            def requested(scale: JsonDict) -> Any:
                return scales.patched_scale(scale, patch, content_type)

            return await self.run(ScaleWrite(self.store, rtype, namespace, name, requested, verb="patch", **options))
        write = Patch(self.store, rtype, namespace, name, patch, content_type, subresource=subresource, **options)
        return await self.run(write)

    async def delete(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        options: Mapping[str, Any] | None = None,
        **write_options: Unpack[DeleteOptions],
    ) -> JsonDict:
        return await self.run(Delete(self.store, rtype, namespace, name, options or {}, **write_options))

    async def delete_collection(
        self,
        rtype: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        options: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        warnings: list[str] | None = None,
    ) -> JsonDict:
        """Delete each selected object as a deletion of its own (each one admitted); the deleted ones are listed."""
        options = options or {}
        if self.admission.authorizers:
            whole = Delete(self.store, rtype, namespace, "", options, in_collection=True, dry_run=dry_run)
            self.admission.authorize("deletecollection", whole.attributes(None, None))
        listing = self.store.list(rtype, namespace, labels=labels, fields=fields)
        items = []
        for obj in listing["items"]:
            metadata = meta(obj)
            write = Delete(
                self.store,
                rtype,
                metadata.get("namespace"),
                metadata["name"],
                options,
                in_collection=True,
                dry_run=dry_run,
                warnings=warnings,
            )
            try:
                items.append(await self.run(write, authorize=False))
            except errors.ApiError as exc:
                if exc.code != 404:  # deleted meanwhile: not listed
                    raise
        return {
            "kind": rtype.list_kind,
            "apiVersion": rtype.api_version,
            "metadata": {"resourceVersion": str(self.store.rv)},
            "items": items,
        }

    async def run(self, write: Write, *, authorize: bool = True) -> JsonDict:
        """Prepare, admit and commit a write; prepared and admitted again while the object changes meanwhile."""
        if authorize and self.admission.authorizers:
            self.admission.authorize(write.verb, write.attributes(write.stored(), None))
        for _ in range(MAX_ATTEMPTS):
            current = write.current()
            new = write.prepare(current)
            if self.admission.active():
                new = await self._admit(write, current, new)
                if not write.unchanged(current):
                    continue
            return write.result(write.commit(current, new))
        raise errors.conflict(write.rtype.plural, write.rtype.group, write.name)

    def run_now(self, write: Write) -> JsonDict:
        """:meth:`run`, synchronously (see :func:`run_now`).

        A write that nothing authorizes or admits is prepared and committed at once, as :meth:`run` would do it,
        without a coroutine to drive (a load makes a hundred thousand of them).
        """
        if self.admission.authorizers or self.admission.active():
            return run_now(self.run(write))
        current = write.current()
        return write.result(write.commit(current, write.prepare(current)))

    async def _admit(self, write: Write, current: JsonDict | None, new: JsonDict | None) -> JsonDict | None:
        attrs = write.attributes(current, new)
        old_view = write.view(current) if current is not None else None
        if new is None:  # a deletion: the webhooks see the object as it is
            await self.admission.mutate(attrs, None, old_view, write.warnings)
            await self.admission.validate(attrs, None, old_view, write.warnings)
            return None
        view = write.mutable_view(new, current)
        mutated = await self.admission.mutate(attrs, view, old_view, write.warnings)
        if mutated is not None and mutated is not view:
            new = write.revise(new, mutated, current)
        await self.admission.validate(attrs, write.view(new), old_view, write.warnings)
        return new


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a write to its end synchronously (loaders, tests): possible while it calls no webhook.

    A write awaits nothing but webhooks; if one is to be called, admission raises a clear error
    (:class:`~kopf_sim.admission.dispatching.SynchronousWriteError`) before calling it.
    """
    token = synchronous_writes.set(True)
    try:
        coroutine.send(None)
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        synchronous_writes.reset(token)
    coroutine.close()
    raise RuntimeError("A synchronous write has awaited something other than a webhook (a bug of the simulator).")
