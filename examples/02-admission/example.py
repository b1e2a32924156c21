"""An operator with admission webhooks: it rejects bad objects, defaults a field, and warns.

Run it against any cluster that can reach 127.0.0.1 (e.g. ``kopf run --sim examples/crd.yaml`` or
``kopf-sim serve``): the webhook server generates a self-signed certificate, and the operator registers
its webhooks in the cluster as the managed configurations ``auto.kopf.dev`` (removed when it exits).
"""

from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.admission.server = kopf.WebhookServer(addr="127.0.0.1", host="127.0.0.1", port=0)
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.validate("kopfexamples")
def no_forbidden_fields(spec: kopf.Spec, **_: Any) -> None:
    if spec.get("field") == "forbidden":
        raise kopf.AdmissionError("The field must not be 'forbidden'.", code=422)


@kopf.on.mutate("kopfexamples")
def default_duration(spec: kopf.Spec, patch: kopf.Patch, warnings: list[str], **_: Any) -> None:
    if "duration" not in spec:
        patch.spec["duration"] = "1m"
        warnings.append("No duration is given: 1m is assumed.")
