"""
Conventions shared by the persistence storages: key naming and stanza cleaning.

Annotation keys are restricted by Kubernetes: an optional DNS-like prefix and
a name of at most 63 characters from ``[-A-Za-z0-9_.]``, starting and ending
with an alphanumeric character. Handler ids are freer (``parent/child``,
``fn/spec.field``, long names), so they are made safe here:

* ``/`` becomes ``.`` (``create_fn/item1`` -> ``create_fn.item1``);
* other disallowed characters become ``-``;
* when the name is too long or had to be altered beyond ``/``, it is cut and
  suffixed with a short stable hash of the original id, so that different ids
  never collide and the same id always maps to the same key.

There are two formats. V2 (current) limits only the name part to 63 characters.
V1 (legacy) limited the whole key, prefix included, to 63 characters, so long
ids were hashed earlier. With ``v1=True`` (the default), both keys are written
and read, so that the operators of either format see each other's records.
"""

import base64
import functools
import hashlib
import re
from collections.abc import Collection, Mapping, MutableMapping
from typing import Any, cast

from kopf._cogs.structs import bodies, dicts, patches

MAX_NAME_LENGTH = 63
_ABSENT = object()  # a field that is not there (None can be a value)

_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_.-]")
_EDGE_CHARS = "-_."


def make_suffix(key: str) -> str:
    """
    A short stable hash of the id, as the published framework makes it (so that both read each other's keys).

    4 bytes of BLAKE2b in base64 without the padding, with ``/`` and ``+`` made valid (``.`` and ``-``).
    """
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=4).digest()
    encoded = base64.b64encode(digest).decode("ascii").rstrip("=")
    return "-" + encoded.replace("/", ".").replace("+", "-")


def make_safe_key(key: str) -> str:
    """The id with its ``/`` (sub-handlers, field handlers) turned into ``.``, valid in annotation names."""
    return key.replace("/", ".")


@functools.lru_cache(maxsize=4096)  # a pure function of the ids, called for every handler on every event
@functools.lru_cache(maxsize=1024)  # asked for the same few ids on every event (several times each)
def make_safe_name(key: str, limit: int = MAX_NAME_LENGTH, *, hashed: str | None = None) -> str:
    """
    Turn an arbitrary id into a valid annotation name of at most ``limit`` chars.

    Long names are cut and suffixed with the hash of ``hashed`` (by default, the id itself).
    Names with the characters that Kubernetes rejects are cleaned and always suffixed (a difference
    from the published framework, which writes them as they are and gets HTTP 422 for them).
    """
    dotted = make_safe_key(key)
    valid = dotted[:1].isalnum() and not _INVALID_CHARS.search(dotted)
    if valid and dotted[-1:].isalnum() and len(dotted) <= limit:
        return dotted
    suffix = make_suffix(key if hashed is None else hashed)
    if valid:  # only too long (or with a trailing '-_.'): cut and suffixed, as the published framework does it
        head = dotted[: max(0, limit - len(suffix))]
    else:
        head = _INVALID_CHARS.sub("-", dotted).strip(_EDGE_CHARS)[: max(0, limit - len(suffix))]
    return f"{head}{suffix}" if head else suffix.lstrip("-")


#: How many ids' keys a storage remembers (they are pure functions of the prefix and the id).
MAX_CACHED_KEYS = 1024

#: The default prefix of the annotations' storages: the objects need no marker of being managed with it.
DEFAULT_PREFIX = "kopf.zalando.org"

#: The name of the marker annotation (``{prefix}/kopf-managed: "yes"``) of the storages with other prefixes.
MANAGED_MARKER_NAME = "kopf-managed"


class StorageKeyFormingConvention:
    """
    Forms the annotation keys (V2 and optionally V1) from a prefix and an id.

    V2 limits the name to ``max_length`` and hashes the original id; V1 limits the whole key
    (prefix included) and hashes the dotted id: both as the published framework does.
    """

    def __init__(self, *args: Any, prefix: str | None, v1: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix
        self.v1 = v1
        # The keys by the prefix, the V1 flag, and the id: asked for the same few ids several times per event.
        self._made_keys: dict[tuple[str | None, bool, str], tuple[str, ...]] = {}

    make_safe_key = staticmethod(make_safe_key)

    def make_suffix(self, key: str) -> str:
        return make_suffix(key)

    def make_v2_key(self, key: str, max_length: int = MAX_NAME_LENGTH) -> str:
        return self._join(make_safe_name(key, max_length))

    def make_v1_key(self, key: str, max_length: int = MAX_NAME_LENGTH) -> str:
        limit = max_length - (len(self.prefix) + 1 if self.prefix else 0)
        return self._join(make_safe_name(key, limit, hashed=make_safe_key(key)))

    def make_keys(self, key: str, body: bodies.Body | None = None) -> list[str]:
        """All the keys for an id, the preferred (V2) first, without duplicates (``body`` is not needed)."""
        try:
            cache = self._made_keys
        except AttributeError:  # a storage of the users' own class that skipped our __init__
            cache = self._made_keys = {}
        cache_key = (self.prefix, self.v1, key)
        made = cache.get(cache_key)
        if made is None:
            keys = [self.make_v2_key(key)]
            if self.v1:
                v1_key = self.make_v1_key(key)
                if v1_key not in keys:
                    keys.append(v1_key)
            if len(cache) >= MAX_CACHED_KEYS:  # e.g. many dynamic sub-handlers' ids: start anew
                cache.clear()
            made = cache[cache_key] = tuple(keys)
        return list(made)

    @property
    def managed_marker_key(self) -> str | None:
        """The marker annotation's key, if the prefix is not the default one (else, none is written)."""
        prefix = getattr(self, "prefix", None)  # a storage of the users' own class may skip our __init__
        return f"{prefix}/{MANAGED_MARKER_NAME}" if prefix and prefix != DEFAULT_PREFIX else None

    def mark_managed(self, body: bodies.Body, patch: patches.Patch) -> None:
        """
        Mark the object as managed under a custom prefix: ``{prefix}/kopf-managed: "yes"``.

        As the published framework does (its users may select the objects by it): whenever the storage writes
        to an object that has no marker (again, if removed); never removed, not for the default prefix.
        """
        key = self.managed_marker_key
        if key is not None and key not in body.metadata.annotations:
            patch.metadata.annotations[key] = "yes"

    def mark_key(self, key: str, body: bodies.Body) -> str:
        """The key as it is stored on this object (no marking is needed: kept for the custom storages)."""
        return key

    def _join(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name


class StorageKeyMarkingConvention:
    """
    Recognises the annotations that are bookkeeping, not the object's essence.

    Such annotations change as a side effect of handling (or of kubectl), so they
    must not be seen as changes of the object: otherwise, every handling cycle
    would cause another one.
    """

    #: Annotations written by well-known tools (incl. the default diff-base of this framework,
    #: which can remain on the objects after switching to other storages), never meaningful for handlers.
    GARBAGE_ANNOTATIONS: frozenset[str] = frozenset(
        {
            "kubectl.kubernetes.io/last-applied-configuration",
            "kopf.zalando.org/last-handled-configuration",
        }
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    @classmethod
    def _drop_annotations(
        cls,
        essence: bodies.BodyEssence,
        keys: set[str] | frozenset[str],
    ) -> bodies.BodyEssence:
        """Remove the specified annotations from a copy of the essence, with their empty parents."""
        annotations = dicts.resolve(essence, ("metadata", "annotations"), None)
        if not isinstance(annotations, Mapping) or not any(key in annotations for key in keys):
            return essence  # nothing to remove: not even copied (the callers own their essences)
        result = cast(dict[str, Any], dicts.deepcopy_json(dict(essence)))
        for key in keys:
            dicts.remove(result, ("metadata", "annotations", key), prune=True)
        return cast(bodies.BodyEssence, result)


class StorageStanzaCleaner:
    """Removes the storages' own fields from essences and from the objects (via patches)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    @staticmethod
    def remove_annotations(essence: MutableMapping[str, Any], keys_to_remove: Collection[str]) -> None:
        """Remove these annotations from the essence in place (for the custom storages' ``clear()``)."""
        annotations = essence.get("metadata", {}).get("annotations")
        if isinstance(annotations, MutableMapping):
            for key in keys_to_remove:
                annotations.pop(key, None)

    @staticmethod
    def remove_empty_stanzas(essence: MutableMapping[str, Any]) -> None:
        """Remove the empty labels, annotations, metadata, status from the essence in place (not the spec)."""
        metadata = essence.get("metadata")
        if isinstance(metadata, MutableMapping):
            for name in ("annotations", "labels"):
                if name in metadata and not metadata[name]:
                    del metadata[name]
        for name in ("metadata", "status"):
            if name in essence and not essence[name]:
                del essence[name]

    @staticmethod
    def _remove_field(essence: bodies.BodyEssence, field: dicts.FieldPath) -> bodies.BodyEssence:
        """Remove a field from a copy of the essence, with the parents that become empty."""
        if dicts.resolve(essence, field, _ABSENT) is _ABSENT:
            return essence  # nothing to remove: not even copied (the callers own their essences)
        result = cast(dict[str, Any], dicts.deepcopy_json(dict(essence)))
        dicts.remove(result, field, prune=True)
        return cast(bodies.BodyEssence, result)

    @staticmethod
    def _purge_field(body: Mapping[str, Any], patch: patches.Patch, field: dicts.FieldPath) -> None:
        """Remove a field from the object: via the patch if it is stored, or from the patch if pending."""
        if dicts.resolve(body, field, None) is not None:
            dicts.ensure(patch, field, None)
        elif dicts.resolve(patch, field, None) is not None:
            dicts.remove(cast(MutableMapping[str, Any], patch), field, prune=True)
