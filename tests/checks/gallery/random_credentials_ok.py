"""Correct, with randomness: a Secret with a random password per gadget, made once (get-or-create), owned by it.

Two correct runs draw two passwords: the checks learn ``data.password`` as noise (no ``mask=`` needed).
"""

import secrets

import kopf
from kopf._cogs.clients import api, errors

SETTINGS = kopf.OperatorSettings()


@kopf.on.create("gadgets")
async def credentials(name, namespace, body, **_):
    path = f"/api/v1/namespaces/{namespace}/secrets"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-credentials"},
        "stringData": {"username": name, "password": secrets.token_urlsafe(16)},
    }
    kopf.append_owner_reference(secret, owner=body)  # owned, without the owner's labels
    try:
        await api.post(path, payload=secret, settings=SETTINGS)
    except errors.APIConflictError:  # made by an earlier run of this handler (e.g. cut short by a crash): kept
        existing = await api.get(f"{path}/{name}-credentials", settings=SETTINGS)
        owners = [ref.get("uid") for ref in existing.get("metadata", {}).get("ownerReferences", [])]
        if body.metadata.uid not in owners:  # a gadget of the same name, deleted: its secret goes away soon
            raise kopf.TemporaryError("The previous gadget's secret is still there.", delay=5) from None
    return {"secret": f"{name}-credentials"}
