import pytest

from kopf._cogs.clients import creating, deleting, errors, patching
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource
from kopf_sim.store.cluster import Cluster
from tests.helpers import widget

from .conftest import CONFIGMAPS, WIDGETS, Recorder, status_response

# The same resource, but as if discovered without the status subresource (e.g. built-in or older CRDs).
WIDGETS_NO_STATUS = Resource("acme.example", "v1", "widgets", kind="Widget", namespaced=True)


async def test_create_read_patch_delete_flow(vault: Vault, settings: OperatorSettings) -> None:
    created = await creating.create_obj(
        resource=CONFIGMAPS, namespace="default", name="cm", body={"data": {"a": "1"}}, settings=settings, vault=vault
    )
    assert created["kind"] == "ConfigMap" and created["metadata"]["namespace"] == "default"
    patched = await patching.patch_obj(
        resource=CONFIGMAPS,
        namespace="default",
        name="cm",
        patch={"data": {"a": None, "b": "2"}},
        settings=settings,
        vault=vault,
    )
    assert patched is not None and patched.get("data") == {"b": "2"}
    deleted = await deleting.delete_obj(
        resource=CONFIGMAPS, namespace="default", name="cm", settings=settings, vault=vault
    )
    assert deleted is None
    again = await deleting.delete_obj(
        resource=CONFIGMAPS, namespace="default", name="cm", settings=settings, vault=vault
    )
    assert again is None


async def test_creating_conflicts_escalate(vault: Vault, settings: OperatorSettings) -> None:
    body = widget("w1")
    await creating.create_obj(resource=WIDGETS, body=body, settings=settings, vault=vault)
    with pytest.raises(errors.APIConflictError):
        await creating.create_obj(resource=WIDGETS, body=body, settings=settings, vault=vault)


async def test_status_goes_to_the_status_subresource(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    await creating.create_obj(resource=WIDGETS, body=widget("w1", size=1), settings=settings, vault=vault)
    recorder.requests.clear()
    patch = Patch()
    patch.spec["size"] = 2
    patch.status["phase"] = "Ready"
    patch.metadata.labels["x"] = "y"
    body = await patching.patch_obj(
        resource=WIDGETS, namespace="default", name="w1", patch=patch, settings=settings, vault=vault
    )
    assert body is not None
    assert body["spec"] == {"size": 2}
    assert body["status"] == {"phase": "Ready"}
    assert body["metadata"]["labels"] == {"x": "y"}
    base = "/apis/acme.example/v1/namespaces/default/widgets/w1"
    assert recorder.paths("PATCH") == [base + "/status", base]  # results first, then "handled": crash-consistent


async def test_status_only_patch_makes_one_request(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    await creating.create_obj(resource=WIDGETS, body=widget("w1"), settings=settings, vault=vault)
    recorder.requests.clear()
    body = await patching.patch_obj(
        resource=WIDGETS, namespace="default", name="w1", patch={"status": {"n": 1}}, settings=settings, vault=vault
    )
    assert body is not None and body["status"] == {"n": 1}
    assert recorder.paths() == ["/apis/acme.example/v1/namespaces/default/widgets/w1/status"]


async def test_without_status_subresource_everything_goes_to_the_object(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    await creating.create_obj(resource=WIDGETS, body=widget("w1"), settings=settings, vault=vault)
    recorder.requests.clear()
    await patching.patch_obj(
        resource=WIDGETS_NO_STATUS,
        namespace="default",
        name="w1",
        patch={"spec": {"size": 3}, "status": {"n": 1}},
        settings=settings,
        vault=vault,
    )
    assert recorder.paths() == ["/apis/acme.example/v1/namespaces/default/widgets/w1"]


async def test_patching_a_gone_object_returns_none(vault: Vault, settings: OperatorSettings) -> None:
    body = await patching.patch_obj(
        resource=WIDGETS,
        namespace="default",
        name="absent",
        patch={"spec": {"size": 1}, "status": {"n": 1}},
        settings=settings,
        vault=vault,
    )
    assert body is None


async def test_patching_an_object_that_disappears_between_the_two_requests(
    cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    await creating.create_obj(resource=WIDGETS, body=widget("w1"), settings=settings, vault=vault)
    rtype = cluster.resource("acme.example", "v1", "widgets")

    def delete_now(request: object) -> bool:
        if getattr(request, "path", "").endswith("/status"):
            cluster.delete(rtype, "default", "w1")
        return False

    recorder.fail(1, lambda: None, when=delete_now)  # type: ignore[arg-type,return-value]
    body = await patching.patch_obj(
        resource=WIDGETS,
        namespace="default",
        name="w1",
        patch={"spec": {"size": 1}, "status": {"n": 1}},
        settings=settings,
        vault=vault,
    )
    assert body is None


async def test_empty_patch_reads_the_object(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    await creating.create_obj(resource=WIDGETS, body=widget("w1"), settings=settings, vault=vault)
    recorder.requests.clear()
    body = await patching.patch_obj(
        resource=WIDGETS, namespace="default", name="w1", patch={}, settings=settings, vault=vault
    )
    assert body is not None and body["metadata"]["name"] == "w1"
    assert [m for m, _, _ in recorder.requests] == ["GET"]


async def test_patch_validation_errors_escalate(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    await creating.create_obj(
        resource=CONFIGMAPS, namespace="default", name="cm", body={}, settings=settings, vault=vault
    )
    recorder.fail(1, status_response(422, "Invalid"), when=lambda r: r.method == "PATCH")
    with pytest.raises(errors.APIUnprocessableEntityError):
        await patching.patch_obj(
            resource=CONFIGMAPS,
            namespace="default",
            name="cm",
            patch={"data": {"a": "1"}},
            settings=settings,
            vault=vault,
        )
    assert recorder.paths("PATCH") == ["/api/v1/namespaces/default/configmaps/cm"]


async def test_deletion_blocked_by_finalizers_returns_the_object(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    body = widget("w1")
    body["metadata"]["finalizers"] = ["example.com/block"]
    await creating.create_obj(resource=WIDGETS, body=body, settings=settings, vault=vault)
    recorder.requests.clear()
    result = await deleting.delete_obj(
        resource=WIDGETS,
        namespace="default",
        name="w1",
        settings=settings,
        vault=vault,
        propagation_policy="Foreground",
    )
    assert result is not None and result["metadata"].get("deletionTimestamp")
    assert recorder.requests[0][0] == "DELETE"


def test_split_patch() -> None:
    assert patching.split_patch(WIDGETS, {"spec": {}, "status": {"a": 1}}) == ({"spec": {}}, {"status": {"a": 1}})
    assert patching.split_patch(WIDGETS_NO_STATUS, {"status": {"a": 1}}) == ({"status": {"a": 1}}, {})
