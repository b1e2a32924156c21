"""
Persistence of the handlers' progress: retries, delays, successes, failures.

The progress is stored on the object itself (there is no database), per handler
id and atomically per handler, so that operators with different handler ids can
share the same objects. The storages only read from the body and write to the
patch: the framework applies the patch to the object later.

* :class:`AnnotationsProgressStorage` -- one JSON annotation per handler:
  ``kopf.zalando.org/{id}``.
* :class:`StatusProgressStorage` -- a structure in the status:
  ``status.kopf.progress.{id}``.
* :class:`MultiProgressStorage` -- several storages in sync: all are written,
  the first one that has a record wins on reading.
* :class:`SmartProgressStorage` -- the default: annotations, then status
  (the status-only storage of the past remains readable).

Besides the records, the storages keep a "touch" value: a dummy field that the
framework changes to cause a new event for the object (e.g. after a delay).
"""

import abc
import copy
import json
from collections.abc import Collection, Mapping
from typing import Any, TypedDict, cast

from kopf._cogs.configs import conventions
from kopf._cogs.structs import bodies, dicts, ids, patches


class ProgressRecord(TypedDict, total=False):
    """The persisted state of one handler; the timestamps are ISO-formatted strings."""

    started: str | None
    stopped: str | None
    delayed: str | None
    purpose: str | None
    retries: int | None
    success: bool | None
    failure: bool | None
    message: str | None
    subrefs: Collection[ids.HandlerId] | None


PROGRESS_RECORD_FIELDS = frozenset(ProgressRecord.__annotations__)

#: The dummy annotation of the custom storages that do not touch the objects their own way.
DEFAULT_TOUCH_ANNOTATION = "kopf.zalando.org/touch-dummy"


class ProgressStorage(conventions.StorageStanzaCleaner, metaclass=abc.ABCMeta):
    """
    The interface of all progress storages.

    Custom storages (e.g. in external databases) implement the abstract methods
    :meth:`fetch`, :meth:`store` and :meth:`purge`, as documented; those that buffer
    the records can write them out in :meth:`flush`, which the framework calls at the
    end of each handling cycle. :meth:`touch` and :meth:`clear` have defaults: a dummy
    annotation (the same as of the default storage), which an external storage cannot
    do better (only a change of the object itself causes a new watch-event for it).
    """

    @abc.abstractmethod
    def fetch(self, *, key: ids.HandlerId, body: bodies.Body) -> ProgressRecord | None:
        """The handler's stored progress record, if any."""

    @abc.abstractmethod
    def store(self, *, key: ids.HandlerId, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        """Put the handler's progress record into the patch."""

    @abc.abstractmethod
    def purge(self, *, key: ids.HandlerId, body: bodies.Body, patch: patches.Patch) -> None:
        """Remove the handler's progress record via the patch."""

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: str | None) -> None:
        """Change (or remove, for ``None``) a dummy field, to cause a new event for the object."""
        if body.metadata.annotations.get(DEFAULT_TOUCH_ANNOTATION) != value:  # also covers absent-vs-None.
            patch.metadata.annotations[DEFAULT_TOUCH_ANNOTATION] = value

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        """Remove this storage's own data from the essence, so that it is not seen as a change."""
        return self._remove_field(essence, ("metadata", "annotations", DEFAULT_TOUCH_ANNOTATION))

    def flush(self) -> None:
        pass


class AnnotationsProgressStorage(
    conventions.StorageKeyFormingConvention, conventions.StorageKeyMarkingConvention, ProgressStorage
):
    """
    The progress in the annotations, one JSON-serialised record per handler.

    With ``verbose=False`` (the default), the ``None`` fields of the records are
    omitted to keep the annotations short; with ``verbose=True``, they are kept.
    """

    def __init__(
        self,
        *,
        prefix: str = "kopf.zalando.org",
        verbose: bool = False,
        touch_key: str = "touch-dummy",
        v1: bool = True,
    ) -> None:
        super().__init__(prefix=prefix, v1=v1)
        self.verbose = verbose
        self.touch_key = touch_key

    def fetch(self, *, key: ids.HandlerId, body: bodies.Body) -> ProgressRecord | None:
        for full_key in self.make_keys(key):
            record = _parse_record(body.metadata.annotations.get(full_key))
            if record is not None:
                return record
        return None

    def store(self, *, key: ids.HandlerId, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        content = record if self.verbose else {k: v for k, v in record.items() if v is not None}
        encoded = json.dumps(content, separators=(",", ":"), default=list)
        self.mark_managed(body, patch)
        for full_key in self.make_keys(key):
            patch.metadata.annotations[full_key] = encoded

    def purge(self, *, key: ids.HandlerId, body: bodies.Body, patch: patches.Patch) -> None:
        self.mark_managed(body, patch)  # as published: even if there is nothing to purge (a handling has ended)
        for full_key in self.make_keys(key):
            self._purge_field(body, patch, ("metadata", "annotations", full_key))

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: str | None) -> None:
        if value is not None:  # a handling goes on; not on the ends of the cycles (e.g. of those with no handlers)
            self.mark_managed(body, patch)
        for full_key in self.make_keys(self.touch_key):
            if body.metadata.annotations.get(full_key) != value:  # also covers absent-vs-None.
                patch.metadata.annotations[full_key] = value

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        annotations: Mapping[str, Any] = essence.get("metadata", {}).get("annotations", {})
        if not annotations:  # usually: nothing to look at (on every event, twice)
            return essence
        touch_keys = set(self.make_keys(self.touch_key))
        marker_key = self.managed_marker_key
        prefix = f"{self.prefix}/" if self.prefix else ""
        marked = {
            key
            for key, value in annotations.items()
            if key in touch_keys or key == marker_key or (key.startswith(prefix) and _parse_record(value) is not None)
        }
        return self._drop_annotations(essence, marked)


class StatusProgressStorage(ProgressStorage):
    """
    The progress in the status stanza: ``status.{name}.progress.{id}`` by default.

    Mind that Kubernetes prunes the unknown fields of the structural schemas,
    so the resource's schema must preserve them for this storage to work.
    """

    def __init__(
        self,
        *,
        name: str = "kopf",
        field: dicts.FieldSpec = "status.{name}.progress",
        touch_field: dicts.FieldSpec = "status.{name}.dummy",
    ) -> None:
        super().__init__()
        self._name = name
        self._field = _format_field(field, name=name)
        self._touch_field = _format_field(touch_field, name=name)

    @property
    def field(self) -> dicts.FieldPath:
        return self._field

    @field.setter
    def field(self, field: dicts.FieldSpec) -> None:
        self._field = _format_field(field, name=self._name)

    @property
    def touch_field(self) -> dicts.FieldPath:
        return self._touch_field

    @touch_field.setter
    def touch_field(self, field: dicts.FieldSpec) -> None:
        self._touch_field = _format_field(field, name=self._name)

    def fetch(self, *, key: ids.HandlerId, body: bodies.Body) -> ProgressRecord | None:
        value = dicts.resolve(body, (*self.field, key), None)
        return cast(ProgressRecord, dict(value)) if isinstance(value, Mapping) else None

    def store(self, *, key: ids.HandlerId, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        # The None values are kept: in a merge-patch, they remove the stale fields of older records.
        dicts.ensure(patch, (*self.field, key), copy.deepcopy(dict(record)))

    def purge(self, *, key: ids.HandlerId, body: bodies.Body, patch: patches.Patch) -> None:
        self._purge_field(body, patch, (*self.field, key))

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: str | None) -> None:
        if dicts.resolve(body, self.touch_field, None) != value:  # also covers absent-vs-None.
            dicts.ensure(patch, self.touch_field, value)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        if all(path and path[0] not in essence for path in (self.field, self.touch_field)):
            return essence  # usually: the essences have no status at all
        essence = self._remove_field(essence, self.field)
        essence = self._remove_field(essence, self.touch_field)
        return essence


class MultiProgressStorage(ProgressStorage):
    """Several storages in sync: all are written, the first found record is read."""

    def __init__(self, storages: Collection[ProgressStorage]) -> None:
        super().__init__()
        self.storages = storages

    def fetch(self, *, key: ids.HandlerId, body: bodies.Body) -> ProgressRecord | None:
        for storage in self.storages:
            record = storage.fetch(key=key, body=body)
            if record is not None:
                return record
        return None

    def store(self, *, key: ids.HandlerId, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        for storage in self.storages:
            storage.store(key=key, record=record, body=body, patch=patch)

    def purge(self, *, key: ids.HandlerId, body: bodies.Body, patch: patches.Patch) -> None:
        for storage in self.storages:
            storage.purge(key=key, body=body, patch=patch)

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: str | None) -> None:
        for storage in self.storages:
            storage.touch(body=body, patch=patch, value=value)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        for storage in self.storages:
            essence = storage.clear(essence=essence)
        return essence

    def flush(self) -> None:
        for storage in self.storages:
            storage.flush()


class ReadOnlyStatusProgressStorage(StatusProgressStorage):
    """
    The status storage that only reads (and purges) the records of the older operators.

    Nothing is written to the status: the records go to the annotations only (as the published
    framework does it), so the status keeps only what the handlers return.
    """

    def store(self, *, key: ids.HandlerId, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        pass

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: str | None) -> None:
        pass


class SmartProgressStorage(MultiProgressStorage):
    """The default: the annotations first, the status second (only read: the older operators' records)."""

    def __init__(
        self,
        *,
        name: str = "kopf",
        field: dicts.FieldSpec = "status.{name}.progress",
        touch_key: str = "touch-dummy",
        touch_field: dicts.FieldSpec = "status.{name}.dummy",
        prefix: str = "kopf.zalando.org",
        v1: bool = True,
        verbose: bool = False,
    ) -> None:
        super().__init__(
            [
                AnnotationsProgressStorage(prefix=prefix, verbose=verbose, touch_key=touch_key, v1=v1),
                ReadOnlyStatusProgressStorage(name=name, field=field, touch_field=touch_field),
            ]
        )


def _format_field(field: dicts.FieldSpec, *, name: str) -> dicts.FieldPath:
    """Substitute the storage's name into a field path template (``status.{name}.progress``)."""
    return tuple(key.format(name=name) for key in dicts.parse_field(field))


def _parse_record(value: Any) -> ProgressRecord | None:
    """Decode a JSON-serialised record; anything else (absent, broken, foreign) is no record."""
    if not isinstance(value, str) or not value:
        return None
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    if not isinstance(decoded, dict) or not set(decoded) <= PROGRESS_RECORD_FIELDS:
        return None
    return cast(ProgressRecord, decoded)
