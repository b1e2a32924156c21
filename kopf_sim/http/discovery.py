"""Discovery documents (``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/G/V``) from the catalogue."""

from __future__ import annotations

import dataclasses
import hashlib

from kopf_sim.kube.objects import JsonDict
from kopf_sim.kube.resources import Catalogue, ResourceType


def version_info(version: str) -> JsonDict:
    major, minor = version.lstrip("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": version,
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions(server_address: str) -> JsonDict:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, versions: list[str]) -> JsonDict:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def group_list(catalogue: Catalogue) -> JsonDict:
    groups = [_group_entry(g, vs) for g, vs in sorted(catalogue.group_versions().items()) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(catalogue: Catalogue, name: str) -> JsonDict | None:
    versions = catalogue.group_versions().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(name, versions)}


def _storage_hash(rtype: ResourceType) -> str:
    digest = hashlib.sha256(f"{rtype.group}/{rtype.storage_version}/{rtype.kind}".encode()).digest()
    import base64

    return base64.b64encode(digest[:8]).decode()


def resource_list(catalogue: Catalogue, group_name: str, version: str) -> JsonDict | None:
    rtypes = sorted(catalogue.in_group_version(group_name, version), key=lambda t: t.plural)
    if not rtypes:
        return None
    resources: list[JsonDict] = []
    for rtype in rtypes:
        entry: JsonDict = {
            "name": rtype.plural,
            "singularName": rtype.singular,
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": list(rtype.verbs),
        }
        if rtype.short_names:
            entry["shortNames"] = list(rtype.short_names)
        if rtype.categories:
            entry["categories"] = list(rtype.categories)
        entry["storageVersionHash"] = _storage_hash(rtype)
        resources.append(entry)
        if "status" in rtype.subresources:
            resources.append(
                {
                    "name": f"{rtype.plural}/status",
                    "singularName": "",
                    "namespaced": rtype.namespaced,
                    "kind": rtype.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if "scale" in rtype.subresources:
            resources.append(
                {
                    "name": f"{rtype.plural}/scale",
                    "singularName": "",
                    "namespaced": rtype.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        if "token" in rtype.subresources:
            resources.append(
                {
                    "name": f"{rtype.plural}/token",
                    "singularName": "",
                    "namespaced": rtype.namespaced,
                    **_TOKEN_REQUEST,
                    "verbs": ["create"],
                }
            )
    group_version = f"{group_name}/{version}" if group_name else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


_TOKEN_REQUEST: JsonDict = {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}
AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> bool:
    """Whether the client asks for aggregated discovery (``apidiscovery.k8s.io/v2``) before the legacy form."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=APIGroupDiscoveryList" in params:
            return "g=apidiscovery.k8s.io" in params and "v=v2" in params
        if part.strip().startswith("application/json"):
            return False
    return False


def _aggregated_resource(rtype: ResourceType) -> JsonDict:
    kind = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
    entry: JsonDict = {
        "resource": rtype.plural,
        "responseKind": kind,
        "scope": "Namespaced" if rtype.namespaced else "Cluster",
        "singularResource": rtype.singular,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    subresources = []
    if "status" in rtype.subresources:
        subresources.append({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]})
    if "scale" in rtype.subresources:
        subresources.append(
            {
                "subresource": "scale",
                "verbs": ["get", "patch", "update"],
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            }
        )
    if "token" in rtype.subresources:
        subresources.append({"subresource": "token", "verbs": ["create"], "responseKind": _TOKEN_REQUEST})
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated(catalogue: Catalogue, *, core: bool) -> JsonDict:
    """The aggregated discovery document of ``/api`` (core) or ``/apis`` (all named groups) in one response."""
    items = []
    for group_name, versions in sorted(catalogue.group_versions().items()):
        if bool(group_name) == core:
            continue
        entries = []
        for version in versions:  # the preferred version first, as the apiserver orders them
            rtypes = sorted(catalogue.in_group_version(group_name, version), key=lambda t: t.plural)
            entries.append(
                {"version": version, "resources": [_aggregated_resource(t) for t in rtypes], "freshness": "Current"}
            )
        items.append({"metadata": {"name": group_name} if group_name else {}, "versions": entries})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}


def document(catalogue: Catalogue, path: tuple[str, ...], *, aggregated_form: bool = False) -> JsonDict | None:
    """The discovery document at a URL path (``/apis/G/V`` is ``("apis", "G", "V")``), None if there is none.

    The legacy ``/api`` is not one of them: it names the server's address as the client reached it.
    """
    if aggregated_form:
        return aggregated(catalogue, core=path == ("api",)) if path in (("api",), ("apis",)) else None
    match path:
        case ("api", "v1"):
            return resource_list(catalogue, "", "v1")
        case ("apis",):
            return group_list(catalogue)
        case ("apis", name):
            return group(catalogue, name)
        case ("apis", name, version):
            return resource_list(catalogue, name, version)
    return None


def shareable(catalogue: Catalogue) -> tuple[ResourceType, ...] | None:
    """The catalogue's types without what discovery does not show (schemas, columns): a cache key.

    Equal keys give equal documents, so fresh clusters with the same resources can share them.
    None if a malformed CRD names things with other JSON than strings (``1 == True`` as keys).
    """
    types = []
    for rtype in catalogue:
        if rtype.custom:
            names = (rtype.singular, rtype.storage_version, *rtype.short_names, *rtype.categories)
            if not all(isinstance(name, str) for name in names):
                return None
            rtype = dataclasses.replace(rtype, schema=None, printer_columns=(), scale=None)
        types.append(rtype)
    return tuple(types)
