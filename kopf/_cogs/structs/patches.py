"""
Patches: the only way for handlers to change the object being handled.

A :class:`Patch` is a JSON merge-patch (RFC 7386) accumulated in a dict:
nested dicts are merged, ``None`` values remove the keys. Handlers fill it via
the stanza sub-views (``patch.spec[...]``, ``patch.metadata.labels[...]``,
``patch.status[...]``), which create the intermediate dicts only when written to.

For admission mutations, the same patch is rendered as a JSON-patch (RFC 6902)
against the object in the admission request: it tells ``add`` from ``replace``
by what the object already has, and drops removals of what is not there.
"""

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, NotRequired, TypedDict, cast

from kopf._cogs.structs import dicts
from kopf._cogs.structs.bodies import RawBody


class JSONPatchItem(TypedDict):
    op: Literal["add", "replace", "remove", "move", "copy", "test"]
    path: str
    value: NotRequired[Any]


JSONPatch = list[JSONPatchItem]

#: A transformation of an object's raw body in place (see :attr:`Patch.fns`).
PatchFn = Callable[[RawBody], None]


class MetaPatch(dicts.MutableMappingView[str, Any]):
    """A writable view of ``metadata`` in a patch, with ``labels`` & ``annotations`` views."""

    def __init__(self, __src: "Patch") -> None:
        super().__init__(__src, "metadata")

    @property
    def labels(self) -> dicts.MutableMappingView[str, str | None]:
        return dicts.MutableMappingView(self, "labels")

    @property
    def annotations(self) -> dicts.MutableMappingView[str, str | None]:
        return dicts.MutableMappingView(self, "annotations")


class SpecPatch(dicts.MutableMappingView[str, Any]):
    """A writable view of ``spec`` in a patch."""

    def __init__(self, __src: "Patch") -> None:
        super().__init__(__src, "spec")


class StatusPatch(dicts.MutableMappingView[str, Any]):
    """A writable view of ``status`` in a patch."""

    def __init__(self, __src: "Patch") -> None:
        super().__init__(__src, "status")


class Patch(dict[str, Any]):
    """
    A merge-patch accumulated by the handlers of one object in one handling cycle.

    The optional ``body`` is the object that the patch will be applied to;
    it is needed only for rendering the patch as a JSON-patch.
    """

    def __init__(
        self,
        src: Mapping[str, Any] | None = None,
        /,
        body: Mapping[str, Any] | None = None,
        fns: Iterable[PatchFn] = (),
    ) -> None:
        super().__init__(src or {})
        self._body = body
        #: Transformations of the whole body, for what a merge-patch cannot express (e.g. removing one item
        #: of a list): applied to the freshest body, sent as a JSON-patch guarded by the resourceVersion.
        self.fns: list[PatchFn] = list(fns)

    def __bool__(self) -> bool:
        return bool(len(self)) or bool(self.fns)

    def __repr__(self) -> str:
        return f"{dict(self)!r} + fns={self.fns!r}" if self.fns else dict.__repr__(self)

    @property
    def body(self) -> Mapping[str, Any] | None:
        return self._body

    @property
    def metadata(self) -> MetaPatch:
        return MetaPatch(self)

    @property
    def meta(self) -> MetaPatch:
        return MetaPatch(self)

    @property
    def spec(self) -> SpecPatch:
        return SpecPatch(self)

    @property
    def status(self) -> StatusPatch:
        return StatusPatch(self)

    def as_json_patch(self) -> JSONPatch:
        """Render the merge-patch (and then the ``fns``) as an equivalent JSON-patch against the body (if known)."""
        body = self._body if self._body is not None else {}
        ops = list(_iter_json_patch(self, body, ()))
        if self.fns:
            import jsonpatch  # on demand (as below): ~3 ms at start-up, for the patch functions only

            merged = jsonpatch.apply_patch(copy.deepcopy(dict(body)), ops)
            ops.extend(cast(JSONPatch, make_fns_patch(merged, self.fns)))
        return ops


def merge_patched_view(
    body: Mapping[str, Any], patch: Mapping[str, Any], *, copy_values: bool = True
) -> dict[str, Any]:
    """What the body will be with the merge-patch applied (RFC 7386), for reading; the body itself unchanged.

    Not the API server's ``apply_merge_patch`` (kopf_sim's: a fresh object, independent of both inputs).
    Only the mappings on the patched paths are new; the rest is shared with the body (not copied:
    a whole object's deep copy per handling cycle costs more than the cycle), so the result is for
    reading. The patch's own values are copied: a patch can change after it was applied
    (``copy_values=False`` shares them too, for a result that is only compared and dropped).
    """
    result: dict[str, Any] = dict(body)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif type(value) is dict or isinstance(value, Mapping):  # plain dicts: no slower ABC check
            existing = result.get(key)
            if not (type(existing) is dict or isinstance(existing, Mapping)):
                existing = {}
            result[key] = merge_patched_view(existing, value, copy_values=copy_values)
        else:
            result[key] = copy.deepcopy(value) if copy_values else value
    return result


def make_fns_patch(body: Mapping[str, Any], fns: Iterable[PatchFn]) -> list[dict[str, Any]]:
    """The JSON-patch operations that the functions make to (a copy of) the body."""
    import jsonpatch  # on demand: ~3 ms at start-up (with difflib & jsonpointer), for the patch functions only

    original = copy.deepcopy(dict(body))
    changed = copy.deepcopy(original)
    for fn in fns:
        fn(cast(RawBody, changed))
    operations: list[dict[str, Any]] = jsonpatch.make_patch(original, changed).patch
    return operations


def _iter_json_patch(patch: Mapping[str, Any], body: Any, path: dicts.FieldPath) -> Iterator[JSONPatchItem]:
    for key, value in patch.items():
        field = (*path, key)
        exists = isinstance(body, Mapping) and key in body
        if value is None:
            if exists:
                yield JSONPatchItem(op="remove", path=_render_pointer(field))
        elif isinstance(value, Mapping) and exists and isinstance(body[key], Mapping):
            yield from _iter_json_patch(value, body[key], field)
        else:
            yield JSONPatchItem(
                op="replace" if exists else "add", path=_render_pointer(field), value=_without_nones(value)
            )


def _without_nones(value: Any) -> Any:
    """In a merge-patch, a ``None`` inside a new dict means absence: drop it."""
    if isinstance(value, Mapping):
        return {key: _without_nones(val) for key, val in value.items() if val is not None}
    return value


def _render_pointer(field: dicts.FieldPath) -> str:
    """Render a JSON pointer (RFC 6901), escaping the special characters of the keys."""
    return "".join("/" + str(key).replace("~", "~0").replace("/", "~1") for key in field)
