"""The OpenAPI v3 documents of the served resources: ``/openapi/v3`` and its per-group-version parts.

Clients read them for three things, so the documents are shaped for those:

* ``kubectl explain`` finds the schema of a kind among ``components.schemas`` by the
  ``x-kubernetes-group-version-kind`` extension and follows the ``$ref`` links in it.
* ``kubectl apply/create/replace --validate=strict`` (the default) checks that the PATCH
  operation of the kind (found by its ``x-kubernetes-group-version-kind``) has a ``fieldValidation``
  query parameter; if so, it leaves validation to the server (``?fieldValidation=Strict``).
  For a kind whose group-version is absent from the index, but which is a CRD, it checks the
  PATCH of core/v1 Namespace instead. Without support, it validates on the client side.
* Client-side ``kubectl apply`` of built-in kinds computes a strategic merge patch from the
  ``x-kubernetes-patch-merge-key`` / ``x-kubernetes-patch-strategy`` of list properties, if the
  PATCH operation accepts ``application/strategic-merge-patch+json``; custom resources get
  a JSON merge patch (they do not accept strategic merge patches).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ServedKind", "gv_path", "openapi_group_version", "openapi_index", "schema_name"]

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_SCALE = "io.k8s.api.autoscaling.v1.Scale"


@dataclass(frozen=True)
class ServedKind:
    """What the OpenAPI documents need to know of one served resource."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    schema: Mapping[str, Any] | None  # a CRD's openAPIV3Schema; None for built-ins
    # For built-ins: field path -> (merge key, patch strategy),
    # e.g. ("spec", "containers") -> ("name", "merge").
    list_strategies: Mapping[tuple[str, ...], tuple[str | None, str]] = field(default_factory=dict)
    subresources: tuple[str, ...] = ()
    description: str = ""
    returns_deleted_object: bool = False  # a DELETE answers with the object (else with a Status)

    @property
    def builtin(self) -> bool:
        return self.schema is None


def gv_path(group: str, version: str) -> str:
    """The key of a group-version in the index: ``api/v1`` or ``apis/<group>/<version>``."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(group: str, version: str, kind: str, *, builtin: bool) -> str:
    """The component name of a kind, as the apiserver names them.

    Built-ins: ``io.k8s.api.apps.v1.Deployment``; custom resources: the reversed group,
    ``dev.kopf.v1.KopfExample`` for ``kopf.dev``.
    """
    if not builtin:
        return ".".join([*reversed(group.split(".")), version, kind])
    if group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{kind}"
    if group == "apiregistration.k8s.io":
        return f"io.k8s.kube-aggregator.pkg.apis.apiregistration.{version}.{kind}"
    short = group.removesuffix(".k8s.io").split(".")[0] if group else "core"
    return f"io.k8s.api.{short}.{version}.{kind}"


# --- the index -------------------------------------------------------------------------------------


def openapi_index(kinds: Iterable[ServedKind]) -> dict[str, Any]:
    """The ``/openapi/v3`` document: one URL per group-version, with a hash of its content.

    The hash changes whenever the group-version's document changes (e.g. a CRD's schema),
    so that clients caching by URL (kubectl does) refetch it.
    """
    kinds = list(kinds)
    paths: dict[str, Any] = {}
    for group, version in sorted({(k.group, k.version) for k in kinds}):
        doc = openapi_group_version(kinds, group, version)
        key = gv_path(group, version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(doc)}"}
    return {"paths": paths}


def _hash(doc: Any) -> str:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha512(text.encode()).hexdigest().upper()


# --- a group-version document ----------------------------------------------------------------------


def openapi_group_version(kinds: Iterable[ServedKind], group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI 3.0 document of one group-version, or None if nothing is served there."""
    selected = sorted((k for k in kinds if k.group == group and k.version == version), key=lambda k: k.plural)
    if not selected:
        return None
    schemas: dict[str, Any] = _common_schemas()
    paths: dict[str, Any] = {}
    for kind in selected:
        name = schema_name(group, version, kind.kind, builtin=kind.builtin)
        schemas[name] = _kind_schema(kind)
        schemas[name + "List"] = _list_schema(kind, name)
        if "scale" in kind.subresources:
            schemas.update(_scale_schemas())
        paths.update(_kind_paths(kind, name))
    builtin = all(k.builtin for k in selected)
    return {
        "openapi": "3.0.0",
        "info": {
            "title": "Kubernetes" if builtin else "Kubernetes CRD Swagger",
            "version": "unversioned" if builtin else "v0.1.0",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
        "security": [{"BearerToken": []}],
    }


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _typed_ref(name: str, description: str, **extra: Any) -> dict[str, Any]:
    """A property referring to a component, as the apiserver writes them in v3 (allOf-wrapped)."""
    return {"description": description, **extra, "allOf": [_ref(name)]}


def _gvk(group: str, version: str, kind: str) -> list[dict[str, str]]:
    return [{"group": group, "kind": kind, "version": version}]


_API_VERSION = {
    "description": "APIVersion defines the versioned schema of this representation of an object. "
    "Servers should convert recognized schemas to the latest internal value, "
    "and may reject unrecognized values.",
    "type": "string",
}
_KIND = {
    "description": "Kind is a string value representing the REST resource this object represents. "
    "Servers may infer this from the endpoint the client submits requests to. "
    "Cannot be updated. In CamelCase.",
    "type": "string",
}
_METADATA = "Standard object's metadata."


def _kind_schema(kind: ServedKind) -> dict[str, Any]:
    """The schema of a kind: the CRD's own, or a permissive one with patch metadata for built-ins."""
    if kind.schema is not None:
        schema = copy.deepcopy(dict(kind.schema))
        schema.setdefault("type", "object")
    else:
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        _add_list_strategies(schema, kind.list_strategies)
        _add_nested_fields(schema, _BUILTIN_NESTED_FIELDS.get((kind.group, kind.kind), {}))
    if kind.description:
        schema["description"] = kind.description
    properties = dict(schema.get("properties") or {})
    properties["apiVersion"] = dict(_API_VERSION)
    properties["kind"] = dict(_KIND)
    properties["metadata"] = _typed_ref(f"{META}.ObjectMeta", _METADATA, default={})
    schema["properties"] = dict(sorted(properties.items()))
    schema["x-kubernetes-group-version-kind"] = _gvk(kind.group, kind.version, kind.kind)
    return schema


Strategies = Mapping[tuple[str, ...], tuple[str | None, str]]


def _add_list_strategies(schema: dict[str, Any], strategies: Strategies) -> None:
    """Declare the properties along the paths, with the patch extensions on the annotated ones.

    A path passing through an annotated list continues in the list's items. An annotated
    path with no merge key is a list of scalars, unless its strategy is only ``retainKeys``
    (which is for objects, e.g. a Deployment's ``spec.strategy``).
    """
    for path in sorted(strategies, key=len):
        if not path or path[0] == "metadata":  # ObjectMeta is a shared component with its own metadata
            continue
        node = schema
        for depth, key in enumerate(path):
            prefix = path[: depth + 1]
            props = node.setdefault("properties", {})
            if prefix in strategies:
                merge_key, strategy = strategies[prefix]
                is_list = merge_key is not None or strategy != "retainKeys"
                prop = props.setdefault(key, {})
                if is_list:
                    prop["type"] = "array"
                    items = prop.setdefault("items", {})
                    if merge_key is not None or depth + 1 < len(path):
                        items.setdefault("type", "object")
                        items.setdefault("x-kubernetes-preserve-unknown-fields", True)
                    if merge_key is not None:
                        prop["x-kubernetes-patch-merge-key"] = merge_key
                else:
                    prop.setdefault("type", "object")
                    prop.setdefault("x-kubernetes-preserve-unknown-fields", True)
                prop["x-kubernetes-patch-strategy"] = strategy
                node = prop["items"] if is_list else prop
            else:
                prop = props.setdefault(key, {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
                node = prop["items"] if prop.get("type") == "array" else prop


# Maps and lists inside built-ins that kubectl's client-side apply looks up by name when they change: its
# strategic three-way merge with OpenAPI v3 fails on any changed map or list that the schema does not declare
# ("warning: error calculating patch from openapi v3 spec: unable to find api field ...") and falls back.
# Paths go through lists transparently; "meta" marks an embedded ObjectMeta (a pod template's metadata),
# "strings" a list of strings.
_PodFields = dict[tuple[str, ...], str]
_CONTAINER_FIELDS: _PodFields = {
    ("command",): "strings",
    ("args",): "strings",
    ("resources",): "object",
    ("resources", "limits"): "object",
    ("resources", "requests"): "object",
}
_POD_SPEC_FIELDS: _PodFields = {
    ("nodeSelector",): "object",
    ("tolerations",): "array",
    **{("containers", *path): type_ for path, type_ in _CONTAINER_FIELDS.items()},
    **{("initContainers", *path): type_ for path, type_ in _CONTAINER_FIELDS.items()},
}
_SELECTOR_FIELDS: _PodFields = {
    ("spec", "selector"): "object",
    ("spec", "selector", "matchLabels"): "object",
    ("spec", "selector", "matchExpressions"): "array",
}


def _pod_template(prefix: tuple[str, ...]) -> _PodFields:
    return {(*prefix, "metadata"): "meta", **{(*prefix, "spec", *p): t for p, t in _POD_SPEC_FIELDS.items()}}


_WORKLOAD_FIELDS: _PodFields = {**_SELECTOR_FIELDS, **_pod_template(("spec", "template"))}
_BUILTIN_NESTED_FIELDS: dict[tuple[str, str], _PodFields] = {
    ("", "ConfigMap"): {("data",): "object", ("binaryData",): "object"},
    ("", "Secret"): {("data",): "object", ("stringData",): "object"},
    ("", "Service"): {("spec", "selector"): "object"},
    ("", "Pod"): {("spec", *p): t for p, t in _POD_SPEC_FIELDS.items()},
    ("apps", "Deployment"): _WORKLOAD_FIELDS,
    ("apps", "ReplicaSet"): _WORKLOAD_FIELDS,
    ("apps", "StatefulSet"): _WORKLOAD_FIELDS,
    ("apps", "DaemonSet"): _WORKLOAD_FIELDS,
    ("batch", "Job"): _WORKLOAD_FIELDS,
    ("batch", "CronJob"): {
        ("spec", "jobTemplate", "metadata"): "meta",
        **_pod_template(("spec", "jobTemplate", "spec", "template")),
    },
}


def _add_nested_fields(schema: dict[str, Any], fields: _PodFields) -> None:
    """Declare (permissively) the maps and lists at the paths, keeping what the patch strategies declared."""
    for path, type_ in sorted(fields.items(), key=lambda item: len(item[0])):
        node = schema
        for key in path[:-1]:
            prop = node.setdefault("properties", {}).setdefault(
                key, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            )
            node = prop["items"] if prop.get("type") == "array" else prop
        props = node.setdefault("properties", {})
        if type_ == "meta":
            props[path[-1]] = _typed_ref(f"{META}.ObjectMeta", _METADATA, default={})
        elif type_ == "strings":
            props.setdefault(path[-1], {"type": "array", "items": {"type": "string", "default": ""}})
        elif type_ == "array":
            props.setdefault(
                path[-1], {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
            )
        else:
            props.setdefault(path[-1], {"type": "object", "x-kubernetes-preserve-unknown-fields": True})


def _list_schema(kind: ServedKind, name: str) -> dict[str, Any]:
    return {
        "description": f"{kind.kind}List is a list of {kind.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": dict(_API_VERSION),
            "items": {"description": f"List of {kind.plural}.", "type": "array", "items": _ref(name)},
            "kind": dict(_KIND),
            "metadata": _typed_ref(f"{META}.ListMeta", "Standard list metadata.", default={}),
        },
        "x-kubernetes-group-version-kind": _gvk(kind.group, kind.version, kind.kind + "List"),
    }


# --- paths and operations --------------------------------------------------------------------------

_JSON_TYPES = ("application/json", "application/yaml")
_CRD_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_BUILTIN_PATCH_TYPES = (*_CRD_PATCH_TYPES, "application/strategic-merge-patch+json")


def _query(name: str, description: str, type_: str = "string", **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": type_, "uniqueItems": True, **schema},
    }


_PRETTY = _query("pretty", "If 'true', then the output is pretty printed.")
_DRY_RUN = _query(
    "dryRun",
    "When present, indicates that modifications should not be persisted. "
    "Valid values are: - All: all dry run stages will be processed",
)
_FIELD_MANAGER = _query(
    "fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."
)
_FIELD_VALIDATION = _query(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
    "containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
)
_FORCE = _query("force", 'Force is going to "force" Apply requests.', "boolean")
_GRACE = _query("gracePeriodSeconds", "The duration in seconds before the object should be deleted.", "integer")
_ORPHAN = _query("orphanDependents", "Deprecated: please use the PropagationPolicy.", "boolean")
_PROPAGATION = _query("propagationPolicy", "Whether and how garbage collection will be performed.")
_LIST_PARAMS = [
    _query("allowWatchBookmarks", 'allowWatchBookmarks requests watch events with type "BOOKMARK".', "boolean"),
    _query("continue", "The continue option should be set when retrieving more results from the server."),
    _query("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
    _query("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _query("limit", "limit is a maximum number of responses to return for a list call.", "integer"),
    _query(
        "resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served from."
    ),
    _query("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is applied to list calls."),
    _query("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`.", "boolean"),
    _query("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
    _query(
        "watch",
        "Watch for changes to the described resources and return them as a stream of add, "
        "update, and remove notifications.",
        "boolean",
    ),
]
_WRITE_PARAMS = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
_DELETE_PARAMS = [_DRY_RUN, _GRACE, _ORPHAN, _PROPAGATION]


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "description": description,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


_NAME = _path_param("name", "name of the resource")
_NAMESPACE = _path_param("namespace", "object name and auth scope, such as for teams and projects")


def _content(schema_ref: str, types: Iterable[str] = _JSON_TYPES) -> dict[str, Any]:
    return {media: {"schema": _ref(schema_ref)} for media in types}


def _responses(schema_ref: str, *codes: str) -> dict[str, Any]:
    texts = {"200": "OK", "201": "Created", "202": "Accepted"}
    responses: dict[str, Any] = {code: {"description": texts[code], "content": _content(schema_ref)} for code in codes}
    responses["401"] = {"description": "Unauthorized"}
    return responses


def _op_id(verb: str, kind: ServedKind, suffix: str = "") -> str:
    scope = "Namespaced" if kind.namespaced and verb != "list" else ""
    parts = (
        [p.capitalize() for p in kind.group.split(".") if p]
        if not kind.builtin
        else ([kind.group.split(".")[0].capitalize()] if kind.group else ["Core"])
    )
    return f"{verb}{''.join(parts)}{kind.version.capitalize()}{scope}{kind.kind}{suffix}"


def _operation(
    kind: ServedKind,
    action: str,
    op_id: str,
    description: str,
    *,
    params: list[dict[str, Any]],
    responses: dict[str, Any],
    body: dict[str, Any] | None = None,
    gvk_kind: str | None = None,
) -> dict[str, Any]:
    tag = (kind.group.split(".")[0] if kind.group else "core") + "_" + kind.version
    operation: dict[str, Any] = {
        "tags": [tag],
        "description": description,
        "operationId": op_id,
        "parameters": params,
    }
    if body is not None:
        operation["requestBody"] = {"content": body, "required": True}
    operation["responses"] = responses
    operation["x-kubernetes-action"] = action
    operation["x-kubernetes-group-version-kind"] = {
        "group": kind.group,
        "kind": gvk_kind or kind.kind,
        "version": kind.version,
    }
    return operation


def _kind_paths(kind: ServedKind, name: str) -> dict[str, Any]:
    """The paths of a kind: the collection(s), the object, its subresources."""
    prefix = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    scope = f"{prefix}/namespaces/{{namespace}}" if kind.namespaced else prefix
    scope_params = [_NAMESPACE] if kind.namespaced else []
    status = f"{META}.Status"
    patch_types = _BUILTIN_PATCH_TYPES if kind.builtin else _CRD_PATCH_TYPES
    k = kind.kind
    paths: dict[str, Any] = {}

    paths[f"{scope}/{kind.plural}"] = {
        "get": _operation(
            kind,
            "list",
            _op_id("list", kind),
            f"list or watch objects of kind {k}",
            params=_LIST_PARAMS,
            responses=_responses(name + "List", "200"),
        ),
        "post": _operation(
            kind,
            "post",
            _op_id("create", kind),
            f"create a {k}",
            params=_WRITE_PARAMS,
            body=_content(name, ("*/*",)),
            responses=_responses(name, "200", "201", "202"),
        ),
        "delete": _operation(
            kind,
            "deletecollection",
            _op_id("deletecollection", kind),
            f"delete collection of {k}",
            params=[*_DELETE_PARAMS, *_LIST_PARAMS],
            body=_content(f"{META}.DeleteOptions", ("*/*",)),
            responses=_responses(status, "200"),
        ),
        "parameters": [*scope_params, _PRETTY],
    }
    if kind.namespaced:
        paths[f"{prefix}/{kind.plural}"] = {
            "get": _operation(
                kind,
                "list",
                _op_id("list", kind, "ForAllNamespaces"),
                f"list or watch objects of kind {k}",
                params=_LIST_PARAMS,
                responses=_responses(name + "List", "200"),
            ),
            "parameters": [_PRETTY],
        }
    item_params = [_NAME, *scope_params, _PRETTY]
    paths[f"{scope}/{kind.plural}/{{name}}"] = {
        "get": _operation(
            kind, "get", _op_id("read", kind), f"read the specified {k}", params=[], responses=_responses(name, "200")
        ),
        "put": _operation(
            kind,
            "put",
            _op_id("replace", kind),
            f"replace the specified {k}",
            params=_WRITE_PARAMS,
            body=_content(name, ("*/*",)),
            responses=_responses(name, "200", "201"),
        ),
        "delete": _operation(
            kind,
            "delete",
            _op_id("delete", kind),
            f"delete a {k}",
            params=_DELETE_PARAMS,
            body=_content(f"{META}.DeleteOptions", ("*/*",)),
            responses=_responses(name if kind.returns_deleted_object else status, "200", "202"),
        ),
        "patch": _operation(
            kind,
            "patch",
            _op_id("patch", kind),
            f"partially update the specified {k}",
            params=[*_WRITE_PARAMS, _FORCE],
            body=_content(f"{META}.Patch", patch_types),
            responses=_responses(name, "200", "201"),
        ),
        "parameters": item_params,
    }
    for sub in kind.subresources:
        target, gvk_kind, suffix = (_SCALE, "Scale", "Scale") if sub == "scale" else (name, None, "Status")
        if sub not in ("status", "scale"):
            continue
        paths[f"{scope}/{kind.plural}/{{name}}/{sub}"] = {
            "get": _operation(
                kind,
                "get",
                _op_id("read", kind, suffix),
                f"read {sub} of the specified {k}",
                params=[],
                responses=_responses(target, "200"),
                gvk_kind=gvk_kind,
            ),
            "put": _operation(
                kind,
                "put",
                _op_id("replace", kind, suffix),
                f"replace {sub} of the specified {k}",
                params=_WRITE_PARAMS,
                body=_content(target, ("*/*",)),
                responses=_responses(target, "200", "201"),
                gvk_kind=gvk_kind,
            ),
            "patch": _operation(
                kind,
                "patch",
                _op_id("patch", kind, suffix),
                f"partially update {sub} of the specified {k}",
                params=[*_WRITE_PARAMS, _FORCE],
                body=_content(f"{META}.Patch", patch_types),
                responses=_responses(target, "200", "201"),
                gvk_kind=gvk_kind,
            ),
            "parameters": item_params,
        }
    return paths


# --- the shared components -------------------------------------------------------------------------


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "type": "string", **extra}


def _common_schemas() -> dict[str, Any]:
    """The apimachinery types that kinds and operations refer to, minimal but valid."""
    time = f"{META}.Time"
    return {
        f"{META}.ObjectMeta": {
            "description": "ObjectMeta is metadata that all persisted resources must have, "
            "which includes all objects users must create.",
            "type": "object",
            "properties": {
                "annotations": {
                    "description": "Annotations is an unstructured key value map.",
                    "type": "object",
                    "additionalProperties": {"type": "string", "default": ""},
                },
                "creationTimestamp": _typed_ref(time, "The time when this object was created."),
                "deletionGracePeriodSeconds": {
                    "description": "Seconds allowed for graceful termination.",
                    "type": "integer",
                    "format": "int64",
                },
                "deletionTimestamp": _typed_ref(time, "The time when this resource will be deleted."),
                "finalizers": {
                    "description": "Must be empty before the object is deleted from the registry.",
                    "type": "array",
                    "items": {"type": "string", "default": ""},
                    "x-kubernetes-list-type": "set",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "generateName": _string("An optional prefix for generating a unique name."),
                "generation": {
                    "description": "A sequence number representing a specific generation of the desired state.",
                    "type": "integer",
                    "format": "int64",
                },
                "labels": {
                    "description": "Map of string keys and values to organize and categorize objects.",
                    "type": "object",
                    "additionalProperties": {"type": "string", "default": ""},
                },
                "managedFields": {
                    "description": "Which fields are managed by which workflow.",
                    "type": "array",
                    "items": {"default": {}, "allOf": [_ref(f"{META}.ManagedFieldsEntry")]},
                    "x-kubernetes-list-type": "atomic",
                },
                "name": _string("Name must be unique within a namespace."),
                "namespace": _string("Namespace defines the space within which each name must be unique."),
                "ownerReferences": {
                    "description": "List of objects depended by this object.",
                    "type": "array",
                    "items": {"default": {}, "allOf": [_ref(f"{META}.OwnerReference")]},
                    "x-kubernetes-list-map-keys": ["uid"],
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "uid",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "resourceVersion": _string("An opaque value that represents the internal version of this object."),
                "selfLink": _string("Deprecated: selfLink is a legacy read-only field."),
                "uid": _string("UID is the unique in time and space value for this object."),
            },
        },
        f"{META}.OwnerReference": {
            "description": "OwnerReference contains enough information to let you identify an owning object.",
            "type": "object",
            "required": ["apiVersion", "kind", "name", "uid"],
            "properties": {
                "apiVersion": _string("API version of the referent.", default=""),
                "blockOwnerDeletion": {"description": "Whether the owner blocks the deletion.", "type": "boolean"},
                "controller": {
                    "description": "If true, this reference points to the managing controller.",
                    "type": "boolean",
                },
                "kind": _string("Kind of the referent.", default=""),
                "name": _string("Name of the referent.", default=""),
                "uid": _string("UID of the referent.", default=""),
            },
            "x-kubernetes-map-type": "atomic",
        },
        f"{META}.ManagedFieldsEntry": {
            "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version "
            "of the resource that the fieldset applies to.",
            "type": "object",
            "properties": {
                "apiVersion": _string("The version of the resource that this field set applies to."),
                "fieldsType": _string("The type of the fields field: FieldsV1."),
                "fieldsV1": _typed_ref(f"{META}.FieldsV1", "The field set."),
                "manager": _string("An identifier of the workflow managing these fields."),
                "operation": _string("The type of operation which lead to this entry: Apply, Update."),
                "subresource": _string("The name of the subresource used to update that object."),
                "time": _typed_ref(time, "The timestamp of the last change."),
            },
        },
        f"{META}.FieldsV1": {
            "description": "FieldsV1 stores a set of fields in a data structure like a Trie.",
            "type": "object",
        },
        time: {
            "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.",
            "type": "string",
            "format": "date-time",
        },
        f"{META}.ListMeta": {
            "description": "ListMeta describes metadata that synthetic resources must have.",
            "type": "object",
            "properties": {
                "continue": _string("Set if the user should set more options to get more results."),
                "remainingItemCount": {
                    "description": "The number of subsequent items in the list.",
                    "type": "integer",
                    "format": "int64",
                },
                "resourceVersion": _string("The version of the list."),
                "selfLink": _string("Deprecated."),
            },
        },
        f"{META}.Status": {
            "description": "Status is a return value for calls that don't return other objects.",
            "type": "object",
            "properties": {
                "apiVersion": dict(_API_VERSION),
                "code": {
                    "description": "Suggested HTTP return code for this status.",
                    "type": "integer",
                    "format": "int32",
                },
                "details": _typed_ref(f"{META}.StatusDetails", "Extended data associated with the reason."),
                "kind": dict(_KIND),
                "message": _string("A human-readable description of the status of this operation."),
                "metadata": _typed_ref(f"{META}.ListMeta", "Standard list metadata.", default={}),
                "reason": _string("A machine-readable description of why this operation is in the Failure status."),
                "status": _string('Status of the operation. One of: "Success" or "Failure".'),
            },
            "x-kubernetes-group-version-kind": _gvk("", "v1", "Status"),
        },
        f"{META}.StatusDetails": {
            "description": "StatusDetails is a set of additional properties that MAY be set by the server.",
            "type": "object",
            "properties": {
                "causes": {
                    "description": "More details associated with the failure.",
                    "type": "array",
                    "items": {"default": {}, "allOf": [_ref(f"{META}.StatusCause")]},
                    "x-kubernetes-list-type": "atomic",
                },
                "group": _string("The group attribute of the resource associated with the status."),
                "kind": _string("The kind attribute of the resource associated with the status."),
                "name": _string("The name attribute of the resource associated with the status."),
                "retryAfterSeconds": {
                    "description": "The number of seconds before the client should retry.",
                    "type": "integer",
                    "format": "int32",
                },
                "uid": _string("UID of the resource."),
            },
        },
        f"{META}.StatusCause": {
            "description": "StatusCause provides more information about an api.Status failure.",
            "type": "object",
            "properties": {
                "field": _string("The field of the resource that has caused this error."),
                "message": _string("A human-readable description of the cause of the error."),
                "reason": _string("A machine-readable description of the cause of the error."),
            },
        },
        f"{META}.DeleteOptions": {
            "description": "DeleteOptions may be provided when deleting an API object.",
            "type": "object",
            "properties": {
                "apiVersion": dict(_API_VERSION),
                "dryRun": {
                    "description": "When present, modifications should not be persisted.",
                    "type": "array",
                    "items": {"type": "string", "default": ""},
                    "x-kubernetes-list-type": "atomic",
                },
                "gracePeriodSeconds": {
                    "description": "The duration in seconds before the object should be deleted.",
                    "type": "integer",
                    "format": "int64",
                },
                "kind": dict(_KIND),
                "orphanDependents": {"description": "Deprecated: please use the PropagationPolicy.", "type": "boolean"},
                "preconditions": _typed_ref(f"{META}.Preconditions", "Must be fulfilled before a deletion."),
                "propagationPolicy": _string("Whether and how garbage collection will be performed."),
            },
        },
        f"{META}.Preconditions": {
            "description": "Preconditions must be fulfilled before an operation is carried out.",
            "type": "object",
            "properties": {
                "resourceVersion": _string("Specifies the target ResourceVersion"),
                "uid": _string("Specifies the target UID."),
            },
        },
        f"{META}.Patch": {
            "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
            "type": "object",
        },
    }


def _scale_schemas() -> dict[str, Any]:
    return {
        _SCALE: {
            "description": "Scale represents a scaling request for a resource.",
            "type": "object",
            "properties": {
                "apiVersion": dict(_API_VERSION),
                "kind": dict(_KIND),
                "metadata": _typed_ref(f"{META}.ObjectMeta", _METADATA, default={}),
                "spec": _typed_ref(f"{_SCALE}Spec", "Defines the behavior of the scale.", default={}),
                "status": _typed_ref(f"{_SCALE}Status", "The current status of the scale.", default={}),
            },
            "x-kubernetes-group-version-kind": _gvk("autoscaling", "v1", "Scale"),
        },
        f"{_SCALE}Spec": {
            "description": "ScaleSpec describes the attributes of a scale subresource.",
            "type": "object",
            "properties": {
                "replicas": {"description": "The desired number of instances.", "type": "integer", "format": "int32"}
            },
        },
        f"{_SCALE}Status": {
            "description": "ScaleStatus represents the current status of a scale subresource.",
            "type": "object",
            "required": ["replicas"],
            "properties": {
                "replicas": {
                    "description": "The actual number of observed instances.",
                    "type": "integer",
                    "format": "int32",
                    "default": 0,
                },
                "selector": _string("A label query over pods that should match the replicas count."),
            },
        },
    }
