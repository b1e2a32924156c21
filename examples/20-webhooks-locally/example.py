"""Defaulting and validating webhooks developed locally, with the patterns of Go operators' webhooks.

Two resources: a ``Database`` (what a service operator owns), and a ``Platform`` (what a composite operator
owns), which embeds a database's spec at ``spec.database.template``. Each spec section has its own defaulter
and validators; the validators return field errors with a base path, so the composite's validators reuse
the service's ones with a longer path, and every bad field reaches the user at once: one ``422 Invalid``
whose causes name each field (kubectl prints them as a bulleted list).

The defaults come from environment variables, read when the operator starts: changing them (e.g. an air-gapped
registry for the images) changes the defaults without a change of the code.

Run it locally against ``kopf-sim serve`` (see the README): the webhook server listens on 127.0.0.1 with a
self-signed certificate, and the operator registers its webhooks with the CA as the managed configurations.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import kopf

#: The environment variables with the defaults, as an operator's deployment sets them.
IMAGE_DEFAULT = "DATABASE_IMAGE_DEFAULT"
REPLICAS_DEFAULT = "DATABASE_REPLICAS_DEFAULT"
STORAGE_CLASS_DEFAULT = "DATABASE_STORAGE_CLASS_DEFAULT"
NAME_LIMIT = 35

# --- Field paths and field errors (as Go's ``field.Path`` and ``field.Error``) -------------------------------


@dataclasses.dataclass(frozen=True)
class FieldPath:
    """A path to a field, built the way the validators descend: ``FieldPath("spec").child("storage")``."""

    text: str

    def child(self, name: str) -> FieldPath:
        return FieldPath(f"{self.text}.{name}")

    def index(self, index: int) -> FieldPath:
        return FieldPath(f"{self.text}[{index}]")

    def __str__(self) -> str:
        return self.text


#: A field error as ``kopf.AdmissionError`` takes it: (the field's path, the message).
FieldError = tuple[str, str]


def invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    return (str(path), f"Invalid value: {json.dumps(value)}: {detail}")


def required(path: FieldPath, detail: str = "") -> FieldError:
    return (str(path), f"Required value: {detail}" if detail else "Required value")


def forbidden(path: FieldPath, detail: str) -> FieldError:
    return (str(path), f"Forbidden: {detail}")


def deny_if_any(errors: Iterable[FieldError]) -> None:
    """One denial with all the field errors (``422 Invalid``), as ``apierrors.NewInvalid`` makes it."""
    errors = list(errors)
    if errors:
        raise kopf.AdmissionError(code=422, causes=errors)


# --- The Database spec: defaults and validation (the service operator's, reused by the composite) -------------


@dataclasses.dataclass(frozen=True)
class Defaults:
    """What a Database spec gets when it says nothing: from the operator's environment, read at start-up."""

    image: str = "postgres:16"
    replicas: int = 1
    storage_class: str = "standard"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Defaults:
        builtin = cls()
        replicas = environ.get(REPLICAS_DEFAULT, "")
        return cls(
            image=environ.get(IMAGE_DEFAULT) or builtin.image,
            replicas=int(replicas) if replicas.isdigit() else builtin.replicas,
            storage_class=environ.get(STORAGE_CLASS_DEFAULT) or builtin.storage_class,
        )


def database_defaults(spec: Mapping[str, Any], defaults: Defaults) -> dict[str, Any]:
    """What the defaulting adds to a Database spec (a merge patch of it): only what is not set."""
    added: dict[str, Any] = {}
    if not spec.get("image"):
        added["image"] = defaults.image
    if spec.get("replicas") is None:
        added["replicas"] = defaults.replicas
    storage = spec.get("storage") or {}
    if not storage.get("class"):
        added["storage"] = {"class": defaults.storage_class}
    return added


def validate_database_create(spec: Mapping[str, Any], base: FieldPath) -> list[FieldError]:
    """The checks of a new Database spec, at ``base`` (``spec``, or a template's path in a composite)."""
    return [*validate_name_length(spec, base), *validate_replicas(spec, base), *validate_storage(spec, base)]


def validate_database_update(spec: Mapping[str, Any], old: Mapping[str, Any], base: FieldPath) -> list[FieldError]:
    """The checks of a changed Database spec: the new spec as a new one, and what may not change."""
    errors = validate_database_create(spec, base)
    old_class = (old.get("storage") or {}).get("class")
    new_class = (spec.get("storage") or {}).get("class")
    if old_class and new_class != old_class:
        errors.append(invalid(base.child("storage").child("class"), new_class, "field is immutable"))
    old_size, new_size = _gibibytes(old), _gibibytes(spec)
    if old_size is not None and new_size is not None and new_size < old_size:
        errors.append(forbidden(base.child("storage").child("size"), f"may not shrink from {old_size}Gi"))
    return errors


def validate_name_length(spec: Mapping[str, Any], base: FieldPath) -> list[FieldError]:
    name = spec.get("databaseName")
    if isinstance(name, str) and len(name) > NAME_LIMIT:
        return [invalid(base.child("databaseName"), name, f"should be shorter than {NAME_LIMIT + 1} characters")]
    return []


def validate_replicas(spec: Mapping[str, Any], base: FieldPath) -> list[FieldError]:
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and not 1 <= replicas <= 9:
        return [invalid(base.child("replicas"), replicas, "must be between 1 and 9")]
    return []


def validate_storage(spec: Mapping[str, Any], base: FieldPath) -> list[FieldError]:
    storage = spec.get("storage") or {}
    path = base.child("storage").child("size")
    if "size" not in storage:
        return [required(path, "the size of the database's volume, e.g. 10Gi")]
    if _gibibytes(spec) is None:
        return [invalid(path, storage["size"], "must be a whole number of gibibytes, e.g. 10Gi")]
    return []


def _gibibytes(spec: Mapping[str, Any]) -> int | None:
    size = (spec.get("storage") or {}).get("size")
    if isinstance(size, str) and size.endswith("Gi") and size[:-2].isdigit():
        return int(size[:-2])
    return None


# --- The Platform spec (the composite operator's): the Database's rules, at a longer path ---------------------


def platform_database(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The embedded database's spec, if the platform enables one."""
    database = spec.get("database") or {}
    return database.get("template") or {} if database.get("enabled") else None


def validate_platform_create(spec: Mapping[str, Any], base: FieldPath) -> list[FieldError]:
    template = platform_database(spec)
    if template is None:
        return []
    return validate_database_create(template, base.child("database").child("template"))


def validate_platform_update(spec: Mapping[str, Any], old: Mapping[str, Any], base: FieldPath) -> list[FieldError]:
    template, old_template = platform_database(spec), platform_database(old)
    if template is None:
        return []
    path = base.child("database").child("template")
    if old_template is None:  # enabled just now: checked as a new database
        return validate_database_create(template, path)
    return validate_database_update(template, old_template, path)


# --- The operator: the webhooks of both resources --------------------------------------------------------------


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    memo.defaults = Defaults.from_environment(os.environ)
    # HTTPS on 127.0.0.1 with a self-signed certificate (needs `cryptography`), its CA in the configurations.
    settings.admission.server = kopf.WebhookServer(addr="127.0.0.1", host="127.0.0.1", port=0)
    settings.admission.managed = "databases.demo.kopf.dev"


@kopf.on.mutate("databases.demo.kopf.dev", operation="CREATE")
def default_database(spec: kopf.Spec, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    patch.spec.update(database_defaults(spec, memo.defaults))


@kopf.on.mutate("platforms.demo.kopf.dev", operation="CREATE")
def default_platform(spec: kopf.Spec, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    template = platform_database(spec)
    if template is not None:
        patch.spec["database"] = {"template": database_defaults(template, memo.defaults)}


@kopf.on.validate("databases.demo.kopf.dev", operation="CREATE")
def validate_new_database(spec: kopf.Spec, **_: Any) -> None:
    deny_if_any(validate_database_create(spec, FieldPath("spec")))


@kopf.on.validate("databases.demo.kopf.dev", operation="UPDATE")
def validate_changed_database(spec: kopf.Spec, old: kopf.Body, **_: Any) -> None:
    deny_if_any(validate_database_update(spec, old.get("spec") or {}, FieldPath("spec")))


@kopf.on.validate("databases.demo.kopf.dev", operation="DELETE")
def validate_database_deletion(old: kopf.Body, **_: Any) -> None:
    if (old.get("spec") or {}).get("protected"):
        deny_if_any([forbidden(FieldPath("spec").child("protected"), "unprotect the database before deleting it")])


@kopf.on.validate("platforms.demo.kopf.dev", operation="CREATE")
def validate_new_platform(spec: kopf.Spec, **_: Any) -> None:
    deny_if_any(validate_platform_create(spec, FieldPath("spec")))


@kopf.on.validate("platforms.demo.kopf.dev", operation="UPDATE")
def validate_changed_platform(spec: kopf.Spec, old: kopf.Body, **_: Any) -> None:
    deny_if_any(validate_platform_update(spec, old.get("spec") or {}, FieldPath("spec")))
