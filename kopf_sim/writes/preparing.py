"""How a write request becomes the next stored state: the apiserver's create/update/patch rules.

These functions compute and validate the new object; they never store it. The store commits
the result (:meth:`kopf_sim.store.cluster.Cluster.replace`), so dry runs reuse the very same path.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from kopf_sim.kube import crds, errors
from kopf_sim.kube.jsoncodec import compact_bytes
from kopf_sim.kube.objects import JsonDict, clone, meta, name_problems
from kopf_sim.kube.resources import ResourceType, StorageKey
from kopf_sim.timing.clock import UidFactory
from kopf_sim.writes import (
    applying,
    defaulting,
    immutability,
    patching,
    podspecs,
    schemas,
    template_rules,
    typecheck,
    validation,
    validation_rules,
    webhookconfigs,
)

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_PATCH)
OBJECT_SIZE_LIMIT = 1_572_864  # etcd's request size limit, which bounds a stored object

_SERVER_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
)
_SERVER_FIELD_NAMES = frozenset(_SERVER_FIELDS)
_LABEL_NAMED = frozenset({("", "namespaces"), ("", "services")})
_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
_NAMESPACES = ("", "namespaces")


class StoreView(Protocol):
    """
    What the write rules read of the store, which passes itself in: its objects, its clock and its uids.

    The rules never write, so they know the store by these reads only (the store imports them, not back).
    """

    @property
    def uids(self) -> UidFactory: ...

    def now(self) -> str: ...

    def peek(self, key: StorageKey, namespace: str | None, name: str) -> JsonDict | None: ...

    def objects(self, key: StorageKey, namespace: str | None = None) -> Iterator[JsonDict]: ...

    def present(self, obj: JsonDict, rtype: ResourceType) -> JsonDict: ...

    def cluster_ip_taken(self, address: str) -> bool: ...

    def node_port_taken(self, port: int) -> bool: ...


def same_content(old: JsonDict, new: JsonDict) -> bool:
    """Whether a write changes nothing but bookkeeping: then the apiserver stores nothing."""
    if old.keys() != new.keys():
        return False
    for key, value in new.items():
        if key == "metadata":
            old_meta, new_meta = dict(old["metadata"]), dict(value)
            for ignored in ("resourceVersion", "managedFields"):
                old_meta.pop(ignored, None)
                new_meta.pop(ignored, None)
            if old_meta != new_meta:
                return False
        elif old[key] != value:
            return False
    return True


def held(rtype: ResourceType, obj: JsonDict) -> bool:
    """Whether finalizers still hold an object (namespaces also have finalizers in their spec; pods a grace period)."""
    if meta(obj).get("finalizers") or meta(obj).get("deletionGracePeriodSeconds"):
        return True
    return rtype.storage_key == ("", "namespaces") and bool((obj.get("spec") or {}).get("finalizers"))


def _require_mapping(body: Any) -> JsonDict:
    if not isinstance(body, dict):
        raise errors.bad_request(f"the object provided is unrecognized: expected an object, got {type(body).__name__}")
    return body


def _decoded(rtype: ResourceType, obj: JsonDict, *, patched: bool = False) -> JsonDict:
    """The object (a private copy) decoded as the kind's Go type would: a 400 if a value has the wrong type.

    Nulls in the type and object metadata are dropped, as Go decodes them into omitted zero values.
    """
    typecheck.check_object(rtype, obj, patched=patched)
    for field in ("apiVersion", "kind"):
        if field in obj and obj[field] is None:
            del obj[field]
    metadata = obj.get("metadata")
    if metadata is None:
        obj["metadata"] = {}
    elif None in metadata.values():
        for key in [key for key, value in metadata.items() if value is None]:
            del metadata[key]
    return obj


def _check_identity(rtype: ResourceType, body: JsonDict) -> None:
    """The body's apiVersion and kind must be the URL's (missing ones are taken from the URL)."""
    api_version = body.setdefault("apiVersion", rtype.api_version)
    kind = body.setdefault("kind", rtype.kind)
    if api_version != rtype.api_version:
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        if group != rtype.group or kind != rtype.kind:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the "
                f"expected API version ({rtype.api_version})"
            )
        body["apiVersion"] = rtype.api_version
    if kind != rtype.kind:
        raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})")


def _check_namespace(rtype: ResourceType, body: JsonDict, namespace: str | None) -> None:
    metadata = body.setdefault("metadata", {})
    if rtype.namespaced:
        given = metadata.get("namespace")
        if given and given != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)


def _apply_schema(
    cluster: StoreView,
    rtype: ResourceType,
    obj: JsonDict,
    *,
    field_validation: str,
    warnings: list[str] | None,
    old: JsonDict | None = None,
) -> JsonDict:
    """Prune, default and validate a custom resource against its CRD's structural schema and CEL rules."""
    if rtype.schema is None:
        return obj
    obj, unknown = schemas.prune_and_default(obj, rtype.schema)
    if unknown and field_validation == "Strict":
        raise errors.bad_request(schemas.strict_decoding_message(rtype.kind, rtype.version, unknown))
    if unknown and field_validation != "Ignore" and warnings is not None:
        warnings.extend(schemas.unknown_field_warning(path) for path in unknown)
    causes = schemas.validate(obj, rtype.schema)
    causes += validation_rules.causes(obj, old, rtype.schema, causes)
    if causes:
        name = meta(obj).get("name", "")
        raise errors.invalid(rtype.kind, rtype.group, name, [c.as_status_cause() for c in causes])
    return obj


_OMITTED_WHEN_EMPTY = frozenset({"labels", "annotations", "finalizers", "ownerReferences", "managedFields"})


def _validate_common(cluster: StoreView, rtype: ResourceType, obj: JsonDict, old: JsonDict | None = None) -> None:
    metadata = obj["metadata"]
    for field in _OMITTED_WHEN_EMPTY:  # ObjectMeta omits empty collections on the wire
        if field in metadata and not metadata[field]:  # (no set made of the keys: every write comes here)
            del metadata[field]
    causes = validation.causes(rtype, obj)
    causes.extend(template_rules.causes(rtype, obj))
    if old is not None:
        causes.extend(immutability.update_causes(rtype, obj, old))
    if rtype.storage_key in _SPECIALLY_VALIDATED:
        causes.extend(_special_causes(rtype, obj, old))
    if causes:
        raise errors.invalid(rtype.kind, rtype.group, metadata.get("name", ""), causes)


#: The kinds with rules of their own beyond :mod:`validation`'s (most writes are of other kinds: one lookup).
_SPECIALLY_VALIDATED = frozenset({_CRDS, validation_rules.POLICIES, *webhookconfigs.CONFIGURATIONS})


def _special_causes(rtype: ResourceType, obj: JsonDict, old: JsonDict | None) -> list[validation.Cause]:
    if rtype.storage_key == _CRDS:
        return [*crds.crd_problems(obj, old), *validation_rules.crd_problems(obj)]
    if rtype.storage_key == validation_rules.POLICIES:
        return list(validation_rules.policy_problems(obj))
    return list(webhookconfigs.causes(rtype, obj))


#: The bytes of ``,"resourceVersion":""`` around a version's digits in an object's compact JSON.
_VERSION_FIELD_BYTES = len(',"resourceVersion":""')


def check_stored_size(raw: bytes, metadata: JsonDict) -> None:
    """Refuse an object whose JSON (as it would be stored, without its resourceVersion) exceeds etcd's limit.

    The store checks the bytes it encodes at the commit (and keeps them to serve), as etcd refuses a request
    that is too large after admission; a dry run checks the bytes of what it would store.
    """
    size = len(raw)
    version = metadata.get("resourceVersion")
    if isinstance(version, str):
        size -= _VERSION_FIELD_BYTES + len(version.encode())
    if size > OBJECT_SIZE_LIMIT:
        raise errors.ApiError(413, "RequestEntityTooLarge", "etcdserver: request is too large")


def check_size(obj: JsonDict) -> None:
    """:func:`check_stored_size` of an object that is not stored (a dry run's)."""
    check_stored_size(compact_bytes(obj), meta(obj))


def _generate_name(cluster: StoreView, prefix: str) -> str:
    """``prefix`` plus five characters from the apiserver's alphabet, derived from the uid generator."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    seed = int(cluster.uids().replace("-", ""), 16)
    suffix = ""
    for _ in range(5):
        seed, index = divmod(seed, len(alphabet))
        suffix += alphabet[index]
    return prefix[:58] + suffix


GENERATE_NAME_ATTEMPTS = 8  # as the apiserver retries a generated name that is taken (Kubernetes 1.31+)


def _unused_name(cluster: StoreView, rtype: ResourceType, namespace: str | None, prefix: str) -> str:
    """A generated name not taken yet, in a few attempts; the last one is returned anyway (and conflicts)."""
    name = _generate_name(cluster, prefix)
    for _ in range(GENERATE_NAME_ATTEMPTS - 1):
        if cluster.peek(rtype.storage_key, namespace if rtype.namespaced else None, name) is None:
            break
        name = _generate_name(cluster, prefix)
    return name


def prepare_create(
    cluster: StoreView,
    rtype: ResourceType,
    namespace: str | None,
    body: Any,
    *,
    field_validation: str = "",
    warnings: list[str] | None = None,
    manager: str | None = None,
    copied: bool = False,
) -> JsonDict:
    """The object as it would be stored on creation (without a resourceVersion yet).

    The body is copied before it is changed, unless the caller says it is a private copy already.
    """
    given = body if type(body) is dict else _require_mapping(body)
    obj = _decoded(rtype, given if copied else clone(given))
    _check_identity(rtype, obj)
    _check_namespace(rtype, obj, namespace)
    metadata = obj["metadata"]
    if metadata.get("resourceVersion"):
        raise errors.ApiError(500, "InternalError", "resourceVersion should not be set on objects to be created")
    if not metadata.get("name") and metadata.get("generateName"):
        metadata["name"] = _unused_name(cluster, rtype, namespace, metadata["generateName"])
    name = metadata.get("name", "")
    if not name:
        raise errors.invalid(
            rtype.kind,
            rtype.group,
            "",
            [
                {
                    "reason": "FieldValueRequired",
                    "field": "metadata.name",
                    "message": "Required value: name or generateName is required",
                }
            ],
        )
    problems = name_problems(name, label=rtype.storage_key in _LABEL_NAMED)
    if problems:
        raise errors.invalid(
            rtype.kind, rtype.group, name, [validation.invalid("metadata.name", name, problem) for problem in problems]
        )
    if rtype.namespaced:
        _check_namespace_writable(cluster, rtype, namespace or "", name)
    if rtype.custom:
        lifecycle_check_creatable(cluster, rtype)
    if not _SERVER_FIELD_NAMES.isdisjoint(metadata):
        for field in _SERVER_FIELDS:
            metadata.pop(field, None)
    metadata["uid"] = cluster.uids()
    metadata["creationTimestamp"] = cluster.now()
    if rtype.has_generation:
        metadata["generation"] = 1
    if rtype.custom and rtype.has_status:
        obj.pop("status", None)
    _initial_state(cluster, rtype, obj)
    if rtype.schema is not None:
        obj = _apply_schema(cluster, rtype, obj, field_validation=field_validation, warnings=warnings)
    _validate_common(cluster, rtype, obj)
    if manager:
        obj = applying.track_update(
            None, obj, manager=manager, kind_key=_kind_key(rtype), api_version=rtype.api_version, now=cluster.now()
        )
    return obj


def prepare_apply_create(
    cluster: StoreView,
    rtype: ResourceType,
    namespace: str | None,
    name: str,
    patch: Any,
    *,
    manager: str | None,
    field_validation: str = "",
    warnings: list[str] | None = None,
) -> JsonDict:
    """Server-side apply on a missing object creates it from the applied configuration."""
    applied = _parse_apply(rtype, patch, name, manager)
    body = _server_side_apply(
        cluster, rtype, None, applied, manager=manager, force=False, namespace=namespace, name=name
    )
    return prepare_create(
        cluster, rtype, namespace, body, field_validation=field_validation, warnings=warnings, manager=None
    )


def prepare_update(
    cluster: StoreView,
    rtype: ResourceType,
    old: JsonDict,
    body: Any,
    *,
    subresource: str | None = None,
    manager: str | None = None,
    field_validation: str = "",
    warnings: list[str] | None = None,
    track: bool = True,
    copied: bool = False,
    patched: bool = False,
) -> JsonDict:
    """The object as it would be stored after a PUT (or a patch, which ends as one).

    The body is copied before it is changed, unless the caller says it is a private copy already.
    """
    given = _require_mapping(body) if copied else clone(_require_mapping(body))
    _decoded(rtype, given, patched=patched)
    _check_identity(rtype, given)
    old_meta = meta(old)
    metadata = given.setdefault("metadata", {})
    name = old_meta["name"]
    if metadata.get("name", name) != name:
        raise errors.bad_request(
            f"the name of the object ({metadata.get('name')}) does not match the name on the URL ({name})"
        )
    if rtype.namespaced and metadata.get("namespace", old_meta.get("namespace")) != old_meta.get("namespace"):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    given_rv = metadata.get("resourceVersion")
    if given_rv:
        if str(given_rv) != old_meta.get("resourceVersion"):
            raise errors.conflict(rtype.plural, rtype.group, name)
    elif not rtype.unconditional_update:
        raise errors.invalid(
            rtype.kind,
            rtype.group,
            name,
            [
                {
                    "reason": "FieldValueInvalid",
                    "field": "metadata.resourceVersion",
                    "message": "Invalid value: 0x0: must be specified for an update",
                }
            ],
        )
    if (given_uid := metadata.get("uid")) and given_uid != old_meta["uid"]:
        raise errors.precondition_failed(
            rtype.plural, rtype.group, name, f"UID in precondition: {given_uid}, UID in object meta: {old_meta['uid']}"
        )

    # The schema's pruning copies the whole object: until then, the old one's parts need no copies of their own.
    pruned = rtype.schema is not None
    if subresource == BINDING:
        new = _bound(old, given)
        track = False  # the apiserver binds in storage, with no managed fields of the scheduler's
    elif subresource == "status":
        new = dict(old) if pruned else clone(old)
        if "status" in given:
            new["status"] = given["status"]
        else:
            new.pop("status", None)
    else:
        new = given
        if rtype.has_status:
            if "status" in old:
                new["status"] = old["status"] if pruned else clone(old["status"])
            else:
                new.pop("status", None)
        new_meta = new["metadata"]
        for field in _SERVER_FIELDS:
            new_meta.pop(field, None)
            if field in old_meta:
                new_meta[field] = old_meta[field]
        new_meta["name"] = name
        if rtype.namespaced:
            new_meta["namespace"] = old_meta["namespace"]
        else:
            new_meta.pop("namespace", None)
        if "managedFields" in old_meta and "managedFields" not in metadata:
            new_meta["managedFields"] = old_meta["managedFields"]
        _check_finalizers(rtype, old_meta, new_meta)
    _keep_initial_state(cluster, rtype, old, new)
    new = _apply_schema(cluster, rtype, new, field_validation=field_validation, warnings=warnings, old=old)
    if rtype.has_generation and _spec_changed(rtype, old, new):
        new["metadata"]["generation"] = int(old_meta.get("generation", 1)) + 1
    _validate_common(cluster, rtype, new, None if subresource == BINDING else old)
    if (
        rtype.storage_key == ("apiextensions.k8s.io", "customresourcedefinitions")
        and subresource is None
        and not new["metadata"].get("deletionTimestamp")
    ):
        conflict = crds.name_conflict(new, cluster.objects(_CRDS))
        new["status"] = {**(new.get("status") or {}), **crds.established_status(new, cluster.now(), conflict)}
    if manager and track and not same_content(old, new):
        new = applying.track_update(
            old,
            new,
            manager=manager,
            kind_key=_kind_key(rtype),
            api_version=rtype.api_version,
            now=cluster.now(),
            subresource=subresource,
        )
    return new


def prepare_patch(
    cluster: StoreView,
    rtype: ResourceType,
    old: JsonDict,
    patch: Any,
    content_type: str,
    *,
    subresource: str | None = None,
    manager: str | None = None,
    force: bool = False,
    field_validation: str = "",
    warnings: list[str] | None = None,
) -> JsonDict:
    current = cluster.present(old, rtype)
    try:
        if content_type == JSON_PATCH:
            patched = patching.apply_json_patch(current, patch)
        elif content_type == MERGE_PATCH:
            patched = patching.apply_merge_patch(current, patch)
        elif content_type == STRATEGIC_PATCH:
            if rtype.custom:
                raise errors.unsupported_media_type(content_type, PATCH_TYPES[:3])
            patched = patching.apply_strategic_merge_patch(current, patch, _kind_key(rtype))
        elif content_type == APPLY_PATCH:
            applied = _parse_apply(rtype, patch, meta(old)["name"], manager)
            try:
                patched = _server_side_apply(
                    cluster,
                    rtype,
                    current,
                    applied,
                    manager=manager,
                    force=force,
                    namespace=meta(old).get("namespace"),
                    name=meta(old)["name"],
                )
            except applying.ApplyConflictError as exc:
                raise errors.ApiError(
                    409,
                    "Conflict",
                    exc.message,
                    details={
                        "causes": [
                            {"reason": "FieldManagerConflict", "message": f'conflict with "{m}"', "field": f}
                            for m, f in exc.conflicts
                        ]
                    },
                ) from None
            return prepare_update(
                cluster,
                rtype,
                old,
                patched,
                subresource=subresource,
                manager=manager,
                field_validation=field_validation,
                warnings=warnings,
                track=False,
                patched=True,
            )
        else:
            raise errors.unsupported_media_type(content_type, PATCH_TYPES)
    except patching.PatchError as exc:
        if exc.code == 400:
            raise errors.bad_request(exc.message) from None
        raise errors.ApiError(exc.code, "Invalid" if exc.code == 422 else "BadRequest", exc.message) from None
    if not isinstance(patched, dict):
        raise errors.bad_request("the patch produced something other than an object")
    # A merge patch's result shares nothing with the old object or the patch: it need not be copied again.
    return prepare_update(
        cluster,
        rtype,
        old,
        patched,
        subresource=subresource,
        manager=manager,
        field_validation=field_validation,
        warnings=warnings,
        copied=content_type == MERGE_PATCH,
        patched=True,
    )


def _server_side_apply(
    cluster: StoreView,
    rtype: ResourceType,
    current: JsonDict | None,
    applied: JsonDict,
    *,
    manager: str | None,
    force: bool,
    namespace: str | None,
    name: str,
) -> JsonDict:
    """The object after applying the configuration (to nothing, for a create); an untypable one is a 400."""
    try:
        return applying.server_side_apply(
            current,
            applied,
            manager=manager or "",
            force=force,
            kind_key=_kind_key(rtype),
            api_version=rtype.api_version,
            now=cluster.now(),
        )
    except applying.TypedPatchError as exc:
        raise _untyped(rtype, namespace, name, exc) from None


def _untyped(rtype: ResourceType, namespace: str | None, name: str, exc: applying.TypedPatchError) -> errors.ApiError:
    """An applied configuration that the kind's schema cannot type (e.g. duplicate list keys).

    The apiserver answers it with a bare 500 (not a Status); the simulator, which never answers a
    client's input with a 5xx, says the same words with 400 BadRequest.
    """
    gvk = f"{rtype.group}/{rtype.version}, Kind={rtype.kind}"
    return errors.bad_request(f"failed to create typed patch object ({namespace or ''}/{name}; {gvk}): {exc.message}")


def _parse_apply(rtype: ResourceType, patch: Any, name: str, manager: str | None) -> JsonDict:
    if not manager:
        raise errors.bad_request("PATCH, application/apply-patch+yaml requires fieldManager parameter")
    if not isinstance(patch, dict):
        raise errors.bad_request("error decoding YAML: the applied configuration must be an object")
    applied: JsonDict = _decoded(rtype, clone(patch), patched=True)
    if not applied.get("apiVersion") or not applied.get("kind"):
        raise errors.bad_request("invalid object type: /, Kind=")
    _check_identity(rtype, applied)
    given_name = meta(applied).get("name")
    if given_name and given_name != name:
        raise errors.bad_request(f"the name of the object ({given_name}) does not match the name on the URL ({name})")
    applied.setdefault("metadata", {})["name"] = name
    return applied


def _kind_key(rtype: ResourceType) -> str | None:
    return None if rtype.custom else rtype.kind_key


def _spec_changed(rtype: ResourceType, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    ignored = {"metadata", "status"} if rtype.has_status else {"metadata"}
    keys = (set(old) | set(new)) - ignored - {"apiVersion", "kind"}
    return any(old.get(key) != new.get(key) for key in keys)


def _check_finalizers(rtype: ResourceType, old_meta: JsonDict, new_meta: JsonDict) -> None:
    if not old_meta.get("deletionTimestamp"):
        return
    added = [f for f in new_meta.get("finalizers") or () if f not in (old_meta.get("finalizers") or ())]
    if added:
        listed = ", ".join(json.dumps(f) for f in added)
        raise errors.invalid(
            rtype.kind,
            rtype.group,
            old_meta["name"],
            [
                {
                    "reason": "FieldValueForbidden",
                    "field": "metadata.finalizers",
                    "message": "Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers []string{{{listed}}}",
                }
            ],
        )


def _check_namespace_writable(cluster: StoreView, rtype: ResourceType, namespace: str, name: str) -> None:
    ns = cluster.peek(_NAMESPACES, None, namespace)
    if ns is None:
        raise errors.not_found("namespaces", "", namespace)
    if ns["metadata"].get("deletionTimestamp"):  # (a stored object has its metadata)
        raise errors.forbidden(
            rtype.plural,
            rtype.group,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
        )


def lifecycle_check_creatable(cluster: StoreView, rtype: ResourceType) -> None:
    """Instances of a CRD that is being deleted cannot be created."""
    if not rtype.custom:
        return
    crd = cluster.peek(("apiextensions.k8s.io", "customresourcedefinitions"), None, f"{rtype.plural}.{rtype.group}")
    if crd is not None and meta(crd).get("deletionTimestamp"):
        raise errors.ApiError(
            405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating"
        )


def _initial_state(cluster: StoreView, rtype: ResourceType, obj: JsonDict) -> None:
    """What a built-in's creation strategy fills in (phases, namespace finalizers, CRD conditions)."""
    defaulting.apply_defaults(rtype, obj)
    initial = _INITIAL_STATES.get(rtype.storage_key)  # (one lookup: most kinds have none)
    if initial is not None:
        initial(cluster, obj)
        defaulting.fill_status(rtype, obj)  # the statuses reset here have their zero fields again


def _initial_namespace(cluster: StoreView, obj: JsonDict) -> None:
    obj["spec"] = {"finalizers": ["kubernetes"], **(obj.get("spec") or {})}
    obj["status"] = {"phase": "Active"}
    _label_namespace_name(obj)


def _initial_pod(cluster: StoreView, obj: JsonDict) -> None:
    podspecs.admit_pod(obj.get("spec"))
    obj["status"] = {"phase": "Pending", "qosClass": podspecs.qos_class(obj.get("spec"))}


def _initial_workload(cluster: StoreView, obj: JsonDict) -> None:
    obj["status"] = {}


def _initial_crd(cluster: StoreView, obj: JsonDict) -> None:
    finalizers = obj["metadata"].setdefault("finalizers", [])
    if crds.CLEANUP_FINALIZER not in finalizers:
        finalizers.append(crds.CLEANUP_FINALIZER)
    if not crds.crd_problems(obj):
        conflict = crds.name_conflict(obj, cluster.objects(_CRDS))
        obj["status"] = crds.established_status(obj, cluster.now(), conflict)


def _initial_secret(cluster: StoreView, obj: JsonDict) -> None:
    _decoded_secret(obj)


def _initial_service(cluster: StoreView, obj: JsonDict) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("type", "ClusterIP") != "ExternalName":
        spec["clusterIP"] = spec.get("clusterIP") or _cluster_ip(cluster)
        spec["clusterIPs"] = spec.get("clusterIPs") or [spec["clusterIP"]]
        _single_stack(spec)
    _node_ports(cluster, spec, {})


_INITIAL_STATES = {
    _NAMESPACES: _initial_namespace,
    ("", "pods"): _initial_pod,
    ("apps", "deployments"): _initial_workload,
    ("apps", "replicasets"): _initial_workload,
    ("apps", "statefulsets"): _initial_workload,
    ("apps", "daemonsets"): _initial_workload,
    ("batch", "jobs"): _initial_workload,
    ("batch", "cronjobs"): _initial_workload,
    _CRDS: _initial_crd,
    ("", "secrets"): _initial_secret,
    ("", "services"): _initial_service,
}


def _label_namespace_name(obj: JsonDict) -> None:
    """The apiserver (1.22+) labels every namespace with its name, and restores the label on updates."""
    metadata = obj["metadata"]
    metadata["labels"] = {**(metadata.get("labels") or {}), "kubernetes.io/metadata.name": metadata["name"]}


def _decoded_secret(obj: JsonDict) -> None:
    """A secret as the apiserver decodes it on every write (a create, an update): its ``stringData`` folded into
    ``data``, and its type defaulted (Go's defaulter: an empty type is ``Opaque``, in a PUT's body too)."""
    _fold_string_data(obj)
    if not obj.get("type"):
        obj["type"] = "Opaque"


def _fold_string_data(obj: JsonDict) -> None:
    """A secret's write-only ``stringData`` is merged into ``data`` (base64, overriding it), never stored."""
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        encoded = {key: base64.b64encode(str(value).encode()).decode() for key, value in string_data.items()}
        obj["data"] = {**(obj.get("data") or {}), **encoded}


def _keep_initial_state(cluster: StoreView, rtype: ResourceType, old: JsonDict, new: JsonDict) -> None:
    """Fields that a built-in's update strategy keeps from the old object (and the defaults of the new one)."""
    defaulting.apply_defaults(rtype, new)
    if rtype.storage_key == ("", "secrets"):
        _decoded_secret(new)
    if rtype.storage_key == ("", "namespaces"):
        new["spec"] = clone(old.get("spec") or {})
        if "status" not in new:
            new["status"] = clone(old.get("status") or {})
        _label_namespace_name(new)
    elif rtype.storage_key == ("", "services"):
        _keep_cluster_ips(cluster, old.get("spec") or {}, new.setdefault("spec", {}))
        _node_ports(cluster, new["spec"], old.get("spec") or {})


def _keep_cluster_ips(cluster: StoreView, old: JsonDict, spec: JsonDict) -> None:
    """A service keeps its cluster IPs when an update leaves them out, as the apiserver fills them in again.

    A changed ``clusterIP`` with the old ``clusterIPs`` is taken as the new ``clusterIPs`` too (then refused
    as a change); a service that stops being an ExternalName gets an address; one that becomes one keeps none.
    """
    if spec.get("type", "ClusterIP") == "ExternalName":
        return
    if old.get("type", "ClusterIP") == "ExternalName":
        spec["clusterIP"] = spec.get("clusterIP") or _cluster_ip(cluster)
        spec["clusterIPs"] = spec.get("clusterIPs") or [spec["clusterIP"]]
        _single_stack(spec)
        return
    if (
        spec.get("clusterIP")
        and spec["clusterIP"] != old.get("clusterIP")
        and spec.get("clusterIPs") == old.get("clusterIPs")
    ):
        spec["clusterIPs"] = [spec["clusterIP"]]
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if not spec.get(field) and old.get(field):
            spec[field] = clone(old[field])


#: The node ports' range of the apiserver (``--service-node-port-range``'s default).
NODE_PORTS = range(30000, 32768)


def _node_ports(cluster: StoreView, spec: JsonDict, old: JsonDict) -> None:
    """A node port for each port of a NodePort (or LoadBalancer) service that has none: the port's old one if the
    service had it, else a free one from a place drawn from the uid generator (as the apiserver allocates them at
    random: the same for the same seed, another one for another seed)."""
    kind = spec.get("type", "ClusterIP")
    if kind not in ("NodePort", "LoadBalancer") or spec.get("allocateLoadBalancerNodePorts") is False:
        return
    ports = [port for port in spec.get("ports") or () if isinstance(port, dict)]
    if all(port.get("nodePort") for port in ports):
        return
    previous = {
        _port_key(port): port["nodePort"]
        for port in old.get("ports") or ()
        if isinstance(port, dict) and port.get("nodePort")
    }
    taken = {port.get("nodePort") for port in ports}  # besides those of the stored services
    for port in ports:
        if port.get("nodePort"):
            continue
        kept = previous.get(_port_key(port))
        if kept is not None:
            port["nodePort"] = kept
            continue
        start = int(cluster.uids().replace("-", ""), 16) % len(NODE_PORTS)
        free = (NODE_PORTS[(start + step) % len(NODE_PORTS)] for step in range(len(NODE_PORTS)))
        chosen = next((port for port in free if port not in taken and not cluster.node_port_taken(port)), None)
        if chosen is None:
            raise errors.ApiError(500, "InternalError", "failed to allocate a nodePort: range is full")
        port["nodePort"] = chosen
        taken.add(chosen)


def _port_key(port: JsonDict) -> tuple[Any, Any]:
    return (port.get("port"), port.get("protocol", "TCP"))


def _single_stack(spec: JsonDict) -> None:
    """The IP families of a service with cluster IPs in the simulator's single-stack (IPv4) cluster."""
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")


BINDING = "binding"


def _bound(old: JsonDict, given: JsonDict) -> JsonDict:
    """A pod assigned to the node of ``given``'s ``spec.nodeName``, as the ``pods/binding`` subresource does.

    The scheduler binds this way: a pod's spec is immutable to updates, ``nodeName`` included.
    """
    name = meta(old)["name"]
    node = (old.get("spec") or {}).get("nodeName")
    if node:
        message = (
            f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{node}"'
        )
        raise errors.ApiError(409, "Conflict", message, details={"name": name, "kind": "pods/binding"})
    new: JsonDict = clone(old)
    new.setdefault("spec", {})["nodeName"] = (given.get("spec") or {}).get("nodeName", "")
    return new


#: The addresses of the services' range (10.96.0.0/16) that the allocation hands out: 10.96.0.2 onwards.
_SERVICE_ADDRESSES = 65_000


def _cluster_ip(cluster: StoreView) -> str:
    """A free address of the services' range, from a place drawn from the uid generator (as the apiserver
    allocates at random: the same for the same seed, another one for another seed).

    The store knows the addresses taken: a few lookups from the start while the range is far from full.
    """
    start = int(cluster.uids().replace("-", ""), 16) % _SERVICE_ADDRESSES
    for step in range(_SERVICE_ADDRESSES):
        index = (start + step) % _SERVICE_ADDRESSES + 1
        candidate = f"10.96.{index // 250}.{index % 250 + 1}"
        if not cluster.cluster_ip_taken(candidate):
            return candidate
    raise errors.ApiError(500, "InternalError", "failed to allocate a serviceIP: range is full")


def after_mutation(
    cluster: StoreView,
    rtype: ResourceType,
    before: JsonDict,
    mutated: JsonDict,
    old: JsonDict | None,
    *,
    subresource: str | None = None,
) -> JsonDict:
    """Re-apply the server's rules to what mutating webhooks returned, as the apiserver does after them.

    Webhooks cannot change identity or server-managed fields, nor the status through the main
    resource; unknown fields they add are pruned, defaults are applied and the schema is checked again.
    """
    result: JsonDict = clone(mutated)
    result["apiVersion"], result["kind"] = before["apiVersion"], before["kind"]
    metadata = result.setdefault("metadata", {})
    before_meta = before["metadata"]
    for field in (*_SERVER_FIELDS, "name", "namespace", "managedFields"):
        metadata.pop(field, None)
        if field in before_meta:
            metadata[field] = before_meta[field]
    if rtype.has_status and subresource is None:
        if "status" in before:
            result["status"] = clone(before["status"])
        else:
            result.pop("status", None)
    if old is not None:
        _check_finalizers(rtype, meta(old), metadata)
    _decoded(rtype, result, patched=True)
    defaulting.apply_defaults(rtype, result)  # what the webhooks added is defaulted, as it is decoded again
    result = _apply_schema(cluster, rtype, result, field_validation="Ignore", warnings=None, old=old)
    if rtype.has_generation:
        if old is None:
            metadata["generation"] = 1
        else:
            bump = 1 if _spec_changed(rtype, old, result) else 0
            metadata["generation"] = int(meta(old).get("generation", 1)) + bump
    _validate_common(cluster, rtype, result, old)
    return result
