"""kopf's bookkeeping annotations under the operator's own prefix are kopf's, not the operator's outcome.

Many operators keep kopf's progress and last handled state under their own domain
(``kopf.AnnotationsProgressStorage(prefix=...)``). The checks once knew kopf's annotations by the default prefix
only: the ``transition`` check created the driven object "directly in its final state" with the last handled state
copied, so kopf took it as handled, and a correct operator failed in one step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import kopf
from pytest_kopf._bookkeeping import is_kopf_annotation, users_annotations, without_bookkeeping
from pytest_kopf.checks import check_operator

GALLERY = Path(__file__).parent / "gallery"
CRD = GALLERY / "crd.yaml"
RESOURCE = "gadgets.checks.example"
PREFIX = "gadgets.example.com"


def own_prefix_registry() -> kopf.OperatorRegistry:
    """A correct operator: the spec's size mirrored into the status, kopf's bookkeeping under its own prefix."""
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=PREFIX)

    @kopf.on.create("gadgets", registry=registry)
    @kopf.on.update("gadgets", registry=registry)
    def mirror(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
        patch.status["size"] = spec.get("size", 0)

    return registry


def test_the_transition_check_passes_an_operator_with_its_own_prefix() -> None:
    check_operator(
        registry=own_prefix_registry,
        manifests=[CRD],
        resources=[RESOURCE],
        checks=["transition", "idempotence"],
        max_examples=3,
        max_steps=4,
        names=["obj-0"],
    )


@pytest.mark.parametrize(
    ("key", "value", "kopfs"),
    [
        ("kopf.zalando.org/last-handled-configuration", '{"spec": {}}', True),
        (f"{PREFIX}/last-handled-configuration", '{"spec": {"size": 1}}', True),
        (f"{PREFIX}/touch-dummy", "2026-01-01T00:00:00", True),
        (f"{PREFIX}/mirror", '{"started": "2026-01-01T00:00:00", "delayed": "2026-01-01T00:01", "retries": 1}', True),
        (f"{PREFIX}/mirror", '{"started": "2026-01-01T00:00:00", "success": true}', True),
        ("example.com/owner", "team-a", False),
        ("example.com/config", '{"started": "yes", "colour": "blue"}', False),  # not only a record's fields
        ("example.com/config", '{"size": 3}', False),
        ("plain", '{"started": "2026-01-01T00:00:00"}', False),  # no prefix: not kopf's
    ],
)
def test_kopfs_annotations_are_told_by_their_prefix_key_or_record(key: str, value: str, kopfs: bool) -> None:
    assert is_kopf_annotation(key, value) is kopfs
    assert (key in users_annotations({key: value})) is not kopfs


def a_handled_gadget() -> dict[str, Any]:
    """A gadget as an operator keeping its progress in the status (a field of its choice) leaves it."""
    return {
        "apiVersion": "checks.example/v1",
        "kind": "Gadget",
        "metadata": {
            "name": "obj-0",
            "annotations": {
                "example.com/owner": "team-a",
                f"{PREFIX}/last-handled-configuration": '{"spec": {"size": 1}}',
            },
        },
        "spec": {"size": 1},
        "status": {"progress": {"mirror": {"started": "2026-01-01T00:00:00"}}, "kopf": {}, "size": 1},
    }


def test_without_settings_kopfs_annotations_and_status_go_by_what_they_are() -> None:
    gadget = a_handled_gadget()
    cleared = without_bookkeeping(gadget)
    assert cleared["metadata"]["annotations"] == {"example.com/owner": "team-a"}
    assert cleared["status"] == {"progress": {"mirror": {"started": "2026-01-01T00:00:00"}}, "size": 1}
    assert gadget == a_handled_gadget()  # the object itself untouched


def test_with_settings_the_operators_storages_clear_what_they_keep_wherever() -> None:
    settings = kopf.OperatorSettings()
    settings.persistence.progress_storage = kopf.StatusProgressStorage(field="status.progress")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=PREFIX)
    cleared = without_bookkeeping(a_handled_gadget(), settings)
    assert cleared["metadata"]["annotations"] == {"example.com/owner": "team-a"}
    assert cleared["status"] == {"size": 1}
