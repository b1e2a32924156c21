"""ControllerRevisions: the template history of StatefulSets and DaemonSets (``kubectl rollout history/undo``).

A revision stores the template as a patch (``{"spec": {"template": {..., "$patch": "replace"}}}``),
named ``<owner>-<hash of the patch>``, with an increasing ``revision`` number; a template that
comes back re-uses its old revision with the next number, as the real controllers do.
"""

from __future__ import annotations

from kopf_sim.kube.objects import JsonDict, clone, meta

from .podtemplates import template_hash
from .runtime import REVISIONS, Controller, new_owner_ref, owned_by

HASH_LABEL = "controller.kubernetes.io/hash"


def revision_data(owner: JsonDict) -> JsonDict:
    template: JsonDict = clone((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def owned_revisions(controller: Controller, owner: JsonDict) -> list[JsonDict]:
    found = [
        obj
        for obj in controller.cluster.dependents_of(meta(owner)["uid"])
        if obj.get("kind") == "ControllerRevision" and owned_by(obj, owner)
    ]
    return sorted(found, key=lambda r: int(r.get("revision") or 0))


async def ensure_revision(controller: Controller, owner: JsonDict) -> tuple[str, str]:
    """The revision of the owner's current template (created or renumbered as needed): its name and hash."""
    data = revision_data(owner)
    hash_ = template_hash(data)
    name = f"{meta(owner)['name']}-{hash_}"
    revisions = owned_revisions(controller, owner)
    highest = max((int(r.get("revision") or 0) for r in revisions), default=0)
    existing = next((r for r in revisions if meta(r)["name"] == name), None)
    if existing is None:
        selector = ((owner.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        body: JsonDict = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": meta(owner).get("namespace"),
                "labels": {**selector, HASH_LABEL: hash_},
                "ownerReferences": [new_owner_ref(owner)],
            },
            "data": data,
            "revision": highest + 1,
        }
        await controller.create(REVISIONS, meta(owner).get("namespace"), body)
    elif int(existing.get("revision") or 0) < highest:
        await controller.update({**existing, "revision": highest + 1})
    return name, hash_


async def prune_revisions(controller: Controller, owner: JsonDict, keep: set[str]) -> None:
    """Delete the oldest revisions beyond ``revisionHistoryLimit`` (never those in use)."""
    limit = int((owner.get("spec") or {}).get("revisionHistoryLimit", 10))
    revisions = [r for r in owned_revisions(controller, owner) if meta(r)["name"] not in keep]
    for revision in revisions[: max(len(revisions) - limit, 0)]:
        await controller.delete(revision)
