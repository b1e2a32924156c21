"""Admission webhooks: validating and mutating, served by kopf itself, registered as a managed configuration."""

import os

from compat_record import record

import kopf


@kopf.on.startup()
def configure(settings, **_):
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1",
        host="127.0.0.1",
        port=int(os.environ["COMPAT_WEBHOOK_PORT"]),
        certfile=os.environ["COMPAT_WEBHOOK_CERT"],
        pkeyfile=os.environ["COMPAT_WEBHOOK_KEY"],
    )
    settings.admission.managed = "compat.kopf.dev"


@kopf.on.validate("kopfexamples", operation="CREATE")
def check_field(name, spec, dryrun, warnings, operation, userinfo, sslpeer, headers, **_):
    record(
        "check_field",
        name,
        spec=spec,
        dryrun=dryrun,
        operation=operation,
        sslpeer=sslpeer,
        sslpeer_type=type(sslpeer).__name__,
        sslpeer_get=sslpeer.get("subject"),
    )
    if spec.get("field") == "forbidden":
        raise kopf.AdmissionError("The field is forbidden.", code=422)
    warnings.append("Checked by the compatibility harness.")


@kopf.on.mutate("kopfexamples", operation="CREATE")
def add_label(name, patch, **_):
    record("add_label", name)
    patch.metadata.labels["mutated"] = "yes"
    patch.spec["defaulted"] = "value"
