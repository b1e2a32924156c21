"""
Persistence of the last handled state of objects ("diff-base"), for change detection.

The stored state is the object's "essence": only the fields that matter for
the handlers -- the spec and other top-level stanzas, the labels, the
annotations (without the bookkeeping ones); no status, no system metadata.
A new state of the object is compared to it to detect whether anything
essential has changed, and to build the ``diff``/``old``/``new`` kwargs.

* :class:`AnnotationsDiffBaseStorage` -- a JSON annotation, by default
  ``kopf.zalando.org/last-handled-configuration`` (the default storage);
* :class:`StatusDiffBaseStorage` -- a JSON string in the status;
* :class:`MultiDiffBaseStorage` -- several storages in sync, e.g. for migrations.
"""

import abc
import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any, cast

from kopf._cogs.configs import conventions
from kopf._cogs.structs import bodies, dicts, patches

#: Top-level fields that never tell anything about the object's desired state.
_SKIPPED_TOP_LEVEL_FIELDS = frozenset({"apiVersion", "kind", "metadata", "status"})


class DiffBaseStorage(conventions.StorageKeyMarkingConvention, conventions.StorageStanzaCleaner, metaclass=abc.ABCMeta):
    """
    The interface of all diff-base storages, and the definition of an essence.

    The essence keeps the labels & annotations (minus the known garbage) and all
    top-level stanzas except ``status``; ``extra_fields`` are kept even if they
    would be dropped otherwise (e.g. a status field watched by a field handler);
    ``ignored_fields`` are dropped: their changes are not seen as changes of the object.
    """

    def __init__(self, ignored_fields: Iterable[dicts.FieldSpec] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ignored_fields: list[dicts.FieldPath] = [
            dicts.parse_field(field) for field in ignored_fields or [] if field is not None
        ]

    def build(
        self,
        *,
        body: bodies.Body,
        extra_fields: Iterable[dicts.FieldSpec] | None = None,
    ) -> bodies.BodyEssence:
        essence: dict[str, Any] = {
            key: dicts.deepcopy_json(value)
            for key, value in dicts.unwrap(body).items()  # the content: not every key resolved again via the view
            if key not in _SKIPPED_TOP_LEVEL_FIELDS
        }
        metadata: Mapping[str, Any] = body.get("metadata") or {}
        labels: Mapping[str, Any] = metadata.get("labels") or {}
        annotations = {
            key: value
            for key, value in (metadata.get("annotations") or {}).items()
            if key not in self.GARBAGE_ANNOTATIONS
        }
        if labels:
            dicts.ensure(essence, ("metadata", "labels"), dicts.deepcopy_json(dict(labels)))
        if annotations:
            dicts.ensure(essence, ("metadata", "annotations"), dicts.deepcopy_json(annotations))
        dicts.cherrypick(body, essence, extra_fields)
        for field in self.ignored_fields:
            dicts.remove(essence, field, prune=True)
        return self.clear(essence=cast(bodies.BodyEssence, essence))

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        """Remove this storage's own data from the essence (by default, there is none)."""
        return essence

    @abc.abstractmethod
    def fetch(self, *, body: bodies.Body) -> bodies.BodyEssence | None:
        """The last handled essence of the object, if stored."""

    @abc.abstractmethod
    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        """Put the essence into the patch, to be stored with the object."""


class AnnotationsDiffBaseStorage(conventions.StorageKeyFormingConvention, DiffBaseStorage):
    """The essence as a JSON annotation: ``{prefix}/{key}``."""

    def __init__(
        self,
        *,
        prefix: str = "kopf.zalando.org",
        key: str = "last-handled-configuration",
        ignored_fields: Iterable[dicts.FieldSpec] | None = None,
        v1: bool = True,
    ) -> None:
        super().__init__(prefix=prefix, v1=v1, ignored_fields=ignored_fields)
        self.key = key

    def build(
        self,
        *,
        body: bodies.Body,
        extra_fields: Iterable[dicts.FieldSpec] | None = None,
    ) -> bodies.BodyEssence:
        return super().build(body=body, extra_fields=extra_fields)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        marker_key = self.managed_marker_key
        return self._drop_annotations(essence, {*self.make_keys(self.key), *([marker_key] if marker_key else [])})

    def fetch(self, *, body: bodies.Body) -> bodies.BodyEssence | None:
        for full_key in self.make_keys(self.key):
            essence = _parse_essence(body.metadata.annotations.get(full_key))
            if essence is not None:
                return essence
        return None

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        encoded = _encode_essence(essence) + "\n"  # byte for byte as the published framework writes it
        self.mark_managed(body, patch)
        for full_key in self.make_keys(self.key):
            patch.metadata.annotations[full_key] = encoded


class StatusDiffBaseStorage(DiffBaseStorage):
    """
    The essence as a JSON string in the status: ``status.kopf.last-handled-configuration``.

    It is a string, not a structure: a merge-patch would merge a new structure
    into the old one, and the removed fields would never go away.
    """

    def __init__(
        self,
        *,
        name: str = "kopf",
        field: dicts.FieldSpec = "status.{name}.last-handled-configuration",
        ignored_fields: Iterable[dicts.FieldSpec] | None = None,
    ) -> None:
        super().__init__(ignored_fields=ignored_fields)
        self._name = name
        self._field = tuple(key.format(name=name) for key in dicts.parse_field(field))

    @property
    def field(self) -> dicts.FieldPath:
        return self._field

    @field.setter
    def field(self, field: dicts.FieldSpec) -> None:
        self._field = tuple(key.format(name=self._name) for key in dicts.parse_field(field))

    def build(
        self,
        *,
        body: bodies.Body,
        extra_fields: Iterable[dicts.FieldSpec] | None = None,
    ) -> bodies.BodyEssence:
        return super().build(body=body, extra_fields=extra_fields)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        return self._remove_field(essence, self.field)

    def fetch(self, *, body: bodies.Body) -> bodies.BodyEssence | None:
        return _parse_essence(dicts.resolve(body, self.field, None))

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        dicts.ensure(patch, self.field, _encode_essence(essence))


class MultiDiffBaseStorage(DiffBaseStorage):
    """Several storages in sync: all are written, the first found essence is read."""

    def __init__(self, storages: Collection[DiffBaseStorage]) -> None:
        super().__init__()
        self.storages = storages

    def build(
        self,
        *,
        body: bodies.Body,
        extra_fields: Iterable[dicts.FieldSpec] | None = None,
    ) -> bodies.BodyEssence:
        return super().build(body=body, extra_fields=extra_fields)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        for storage in self.storages:
            essence = storage.clear(essence=essence)
        return essence

    def fetch(self, *, body: bodies.Body) -> bodies.BodyEssence | None:
        for storage in self.storages:
            essence = storage.fetch(body=body)
            if essence is not None:
                return essence
        return None

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        for storage in self.storages:
            storage.store(body=body, patch=patch, essence=essence)


def _encode_essence(essence: bodies.BodyEssence) -> str:
    return json.dumps(essence, separators=(",", ":"))


def _parse_essence(value: Any) -> bodies.BodyEssence | None:
    """Decode a stored essence; a structure is accepted too (e.g. if written by other tools)."""
    if isinstance(value, Mapping):
        return cast(bodies.BodyEssence, dicts.deepcopy_json(dict(value)))
    if not isinstance(value, str) or not value:
        return None
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    return cast(bodies.BodyEssence, decoded) if isinstance(decoded, dict) else None
