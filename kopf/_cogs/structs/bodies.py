"""
Kubernetes objects as handlers see them: raw dicts and live read-only views.

The raw types (``RawBody``, ``RawMeta``, ``RawEvent``) only describe the JSON
as it comes from the API. The views (``Body``, ``Meta``, ``Spec``, ``Status``,
``Labels``, ``Annotations``) wrap it for the handlers: they are read-only (the
changes go to patches, never to the bodies) and live, i.e. they show the latest
state of the object even after the framework replaces the underlying dict with
a newer version of the object (important for long-running daemons and timers).
"""

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast

from kopf._cogs.structs import dicts, ids

NamespaceName = ids.NamespaceName


class RawMeta(TypedDict, total=False):
    uid: str
    name: str
    generateName: str
    namespace: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    finalizers: list[str]
    ownerReferences: list[Mapping[str, Any]]
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    selfLink: str


class RawBody(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: RawMeta
    spec: Mapping[str, Any]
    status: Mapping[str, Any]


#: The types of the watch-events (``None`` for the objects of the initial listing).
RawEventType = Literal[None, "ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


class RawEvent(TypedDict):
    type: RawEventType
    object: RawBody


class MetaEssence(TypedDict, total=False):
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


class BodyEssence(TypedDict, total=False):
    """The meaningful part of an object, as tracked for the change detection."""

    metadata: MetaEssence
    spec: Mapping[str, Any]
    status: Mapping[str, Any]


class ObjectReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    namespace: str | None
    name: str
    uid: str


class OwnerReference(TypedDict, total=False):
    controller: bool
    blockOwnerDeletion: bool
    apiVersion: str
    kind: str
    name: str
    uid: str


class Labels(dicts.MappingView[str, str]):
    """A live read-only view of ``metadata.labels``; empty if there are none."""

    def __init__(self, __src: Mapping[str, Any], __path: dicts.FieldPath = ("labels",)) -> None:
        super().__init__(__src, __path)


class Annotations(dicts.MappingView[str, str]):
    """A live read-only view of ``metadata.annotations``; empty if there are none."""

    def __init__(self, __src: Mapping[str, Any], __path: dicts.FieldPath = ("annotations",)) -> None:
        super().__init__(__src, __path)


class Meta(dicts.MappingView[str, Any]):
    """A live read-only view of ``metadata``, with shortcuts to its common fields."""

    def __init__(self, __src: Mapping[str, Any]) -> None:
        super().__init__(__src, "metadata")
        self._labels: Labels | None = None  # made on the first use: a body is made per event, and rarely asked
        self._annotations: Annotations | None = None

    # The sub-views look at the metadata's own source, not at this view: no reference cycle (see Body).
    @property
    def labels(self) -> Mapping[str, str]:
        if self._labels is None:
            self._labels = Labels(self._src, (*self._path, "labels"))
        return self._labels

    @property
    def annotations(self) -> Mapping[str, str]:
        if self._annotations is None:
            self._annotations = Annotations(self._src, (*self._path, "annotations"))
        return self._annotations

    @property
    def uid(self) -> str | None:
        return cast(str | None, self.get("uid"))

    @property
    def name(self) -> str | None:
        return cast(str | None, self.get("name"))

    @property
    def namespace(self) -> NamespaceName | None:
        namespace = self.get("namespace")
        return None if namespace is None else NamespaceName(namespace)

    @property
    def creation_timestamp(self) -> str | None:
        return cast(str | None, self.get("creationTimestamp"))

    @property
    def deletion_timestamp(self) -> str | None:
        return cast(str | None, self.get("deletionTimestamp"))


class Spec(dicts.MappingView[str, Any]):
    """A live read-only view of ``spec``; empty if there is none."""

    def __init__(self, __src: Mapping[str, Any]) -> None:
        super().__init__(__src, "spec")


class Status(dicts.MappingView[str, Any]):
    """A live read-only view of ``status``; empty if there is none."""

    def __init__(self, __src: Mapping[str, Any]) -> None:
        super().__init__(__src, "status")


class Body(dicts.ReplaceableMappingView[str, Any]):
    """
    A live read-only view of a whole object, with views of its main stanzas.

    The stanza views are created once and follow the body, so a handler can keep
    ``spec`` or ``status`` and still see the newest values after the framework
    replaces the body's content with a newer version of the object.

    The stanza views look at a root view that the body shares with them, not at the body itself:
    with no reference cycle, a body made for an event is freed as soon as it is no longer used,
    not when the garbage collector comes by (with thousands of objects, megabytes of their bodies
    waited for it).
    """

    def __init__(self, __src: Mapping[str, Any]) -> None:
        super().__init__(__src)
        root: dicts.ReplaceableMappingView[str, Any] = dicts.ReplaceableMappingView(__src)
        self._root = root
        self._meta = Meta(root)
        self._spec: Spec | None = None  # made on the first use: a body is made per event, the spec rarely asked
        self._status: Status | None = None

    def _replace_with(self, __src: Mapping[Any, Any]) -> None:
        super()._replace_with(__src)
        self._root._replace_with(__src)

    @property
    def metadata(self) -> Meta:
        return self._meta

    @property
    def meta(self) -> Meta:
        return self._meta

    @property
    def spec(self) -> Spec:
        if self._spec is None:
            self._spec = Spec(self._root)
        return self._spec

    @property
    def status(self) -> Status:
        if self._status is None:
            self._status = Status(self._root)
        return self._status


def _as_body(body: Mapping[str, Any]) -> Body:
    return body if isinstance(body, Body) else Body(body)


def build_object_reference(body: Mapping[str, Any]) -> ObjectReference:
    """
    Build a reference to the object, e.g. for the ``involvedObject`` of events.

    The absent fields are omitted: e.g. the namespace of cluster-scoped objects.
    """
    metadata = body.get("metadata")  # read directly, with no views made: a reference is built per event
    metadata = metadata if isinstance(metadata, Mapping) else {}
    fields: dict[str, Any] = {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "name": metadata.get("name"),
        "uid": metadata.get("uid"),
        "namespace": metadata.get("namespace"),
    }
    return cast(ObjectReference, {key: val for key, val in fields.items() if val is not None})


def build_owner_reference(
    body: Mapping[str, Any],
    *,
    controller: bool | None = True,
    block_owner_deletion: bool | None = True,
) -> OwnerReference:
    """
    Build an owner reference to the object, to be put into its children.

    Owner references have no namespace: the children must be in the same
    namespace as the owner, or the owner must be cluster-scoped.
    """
    body = _as_body(body)
    fields: dict[str, Any] = {
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "name": body.meta.name,
        "uid": body.meta.uid,
    }
    return cast(OwnerReference, {key: val for key, val in fields.items() if val is not None})
