"""Writes with admission: the store's steps with the webhooks' calls in between, as in the apiserver.

The store's own write methods are synchronous and atomic. Admission is not (webhooks are awaited),
so here a write is prepared, admitted, and committed only if the object did not change meanwhile;
otherwise it is prepared and admitted again on the fresh state (the apiserver retries the same way).
Without any webhook configuration, these are the store's methods, with no extra cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_sim.admission.webhooks import AdmissionControl, Attributes
from kopf_sim.kube import errors
from kopf_sim.kube.objects import JsonDict, clone, meta
from kopf_sim.kube.resources import ResourceType
from kopf_sim.store.cluster import Cluster
from kopf_sim.writes import preparing

MAX_ATTEMPTS = 5
_CREATE_HIDDEN = ("uid", "creationTimestamp", "generation", "resourceVersion", "managedFields")


def _options(kind: str, manager: str | None, dry_run: bool) -> JsonDict:
    options: JsonDict = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if manager:
        options["fieldManager"] = manager
    if dry_run:
        options["dryRun"] = ["All"]
    return options


async def create(
    cluster: Cluster,
    control: AdmissionControl,
    rtype: ResourceType,
    namespace: str | None,
    body: Any,
    *,
    dry_run: bool = False,
    manager: str | None = None,
    field_validation: str = "",
    warnings: list[str],
) -> JsonDict:
    if not control.has_webhooks():
        return cluster.create(
            rtype,
            namespace,
            body,
            dry_run=dry_run,
            manager=manager,
            field_validation=field_validation,
            warnings=warnings,
        )
    named = isinstance(body, dict) and bool(meta(body).get("name"))
    new = preparing.prepare_create(
        cluster, rtype, namespace, body, field_validation=field_validation, warnings=warnings, manager=manager
    )
    return await _admit_new(
        cluster, control, rtype, new, named=named, dry_run=dry_run, manager=manager, warnings=warnings
    )


async def _admit_new(
    cluster: Cluster,
    control: AdmissionControl,
    rtype: ResourceType,
    new: JsonDict,
    *,
    named: bool,
    dry_run: bool,
    manager: str | None,
    warnings: list[str],
) -> JsonDict:
    """Admit a new object: mutating webhooks see it before the server fills in its system fields."""
    attrs = Attributes(
        rtype,
        "CREATE",
        meta(new).get("namespace"),
        meta(new)["name"],
        None,
        dry_run,
        _options("CreateOptions", manager, dry_run),
    )
    view = clone(cluster.present(new, rtype))
    for field in _CREATE_HIDDEN:
        view["metadata"].pop(field, None)
    if not named:
        view["metadata"].pop("name", None)
    mutated = await control.mutate(attrs, view, None, warnings)
    if mutated is not view and mutated is not None:
        new = preparing.after_mutation(cluster, rtype, new, mutated, None)
    await control.validate(attrs, cluster.present(new, rtype), None, warnings)
    if dry_run:
        return cluster.present(new, rtype)
    return cluster.present(cluster.commit_new(rtype, new), rtype)


async def update(
    cluster: Cluster,
    control: AdmissionControl,
    rtype: ResourceType,
    namespace: str | None,
    name: str,
    body: Any,
    *,
    subresource: str | None = None,
    dry_run: bool = False,
    manager: str | None = None,
    field_validation: str = "",
    warnings: list[str],
) -> JsonDict:
    if not control.has_webhooks():
        return cluster.update(
            rtype,
            namespace,
            name,
            body,
            subresource=subresource,
            dry_run=dry_run,
            manager=manager,
            field_validation=field_validation,
            warnings=warnings,
        )

    def prepare(old: JsonDict) -> JsonDict:
        return preparing.prepare_update(
            cluster,
            rtype,
            old,
            body,
            subresource=subresource,
            manager=manager,
            field_validation=field_validation,
            warnings=warnings,
        )

    return await _admit_change(
        cluster,
        control,
        rtype,
        namespace,
        name,
        prepare,
        subresource=subresource,
        dry_run=dry_run,
        manager=manager,
        warnings=warnings,
    )


async def patch(
    cluster: Cluster,
    control: AdmissionControl,
    rtype: ResourceType,
    namespace: str | None,
    name: str,
    body: Any,
    content_type: str,
    *,
    subresource: str | None = None,
    dry_run: bool = False,
    manager: str | None = None,
    force: bool = False,
    field_validation: str = "",
    warnings: list[str],
) -> JsonDict:
    if not control.has_webhooks():
        return cluster.patch(
            rtype,
            namespace,
            name,
            body,
            content_type,
            subresource=subresource,
            dry_run=dry_run,
            manager=manager,
            force=force,
            field_validation=field_validation,
            warnings=warnings,
        )
    if (
        content_type == preparing.APPLY_PATCH
        and subresource is None
        and cluster.peek(rtype.storage_key, namespace, name) is None
    ):
        new = preparing.prepare_apply_create(
            cluster, rtype, namespace, name, body, manager=manager, field_validation=field_validation, warnings=warnings
        )
        return await _admit_new(
            cluster, control, rtype, new, named=True, dry_run=dry_run, manager=manager, warnings=warnings
        )

    def prepare(old: JsonDict) -> JsonDict:
        return preparing.prepare_patch(
            cluster,
            rtype,
            old,
            body,
            content_type,
            subresource=subresource,
            manager=manager,
            force=force,
            field_validation=field_validation,
            warnings=warnings,
        )

    return await _admit_change(
        cluster,
        control,
        rtype,
        namespace,
        name,
        prepare,
        subresource=subresource,
        dry_run=dry_run,
        manager=manager,
        warnings=warnings,
    )


async def _admit_change(
    cluster: Cluster,
    control: AdmissionControl,
    rtype: ResourceType,
    namespace: str | None,
    name: str,
    prepare: Any,
    *,
    subresource: str | None,
    dry_run: bool,
    manager: str | None,
    warnings: list[str],
) -> JsonDict:
    for _ in range(MAX_ATTEMPTS):
        old = cluster.peek(rtype.storage_key, namespace, name)
        if old is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        new = prepare(old)
        attrs = Attributes(
            rtype, "UPDATE", namespace, name, subresource, dry_run, _options("UpdateOptions", manager, dry_run)
        )
        presented_old = cluster.present(old, rtype)
        mutated = await control.mutate(attrs, clone(cluster.present(new, rtype)), presented_old, warnings)
        if mutated is not None:
            new = preparing.after_mutation(cluster, rtype, new, mutated, old, subresource=subresource)
        await control.validate(attrs, cluster.present(new, rtype), presented_old, warnings)
        if cluster.peek(rtype.storage_key, namespace, name) is old:
            return cluster.present(cluster.replace(rtype, old, new, dry_run=dry_run), rtype)
    raise errors.conflict(rtype.plural, rtype.group, name)


async def delete(
    cluster: Cluster,
    control: AdmissionControl,
    rtype: ResourceType,
    namespace: str | None,
    name: str,
    options: Mapping[str, Any],
    *,
    dry_run: bool = False,
    warnings: list[str],
) -> JsonDict:
    if control.has_webhooks():
        obj = cluster.peek(rtype.storage_key, namespace, name)
        if obj is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        attrs = Attributes(
            rtype,
            "DELETE",
            namespace,
            name,
            None,
            dry_run,
            {**_options("DeleteOptions", None, dry_run), **dict(options)},
        )
        presented = cluster.present(obj, rtype)
        await control.mutate(attrs, None, presented, warnings)
        await control.validate(attrs, None, presented, warnings)
    return cluster.delete(rtype, namespace, name, options, dry_run=dry_run)


__all__ = ["create", "delete", "patch", "update"]
