import pytest

from kopf._cogs.clients import scanning
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import Vault
from kopf._cogs.structs.references import EVERYTHING, Resource, Selector
from kopf_sim.store.cluster import Cluster

from .conftest import Recorder, status_response


def by_name(resources: list[Resource]) -> dict[str, Resource]:
    return {resource.name: resource for resource in resources}


async def test_discovery_of_builtins_and_crds(vault: Vault, settings: OperatorSettings) -> None:
    resources = by_name(await scanning.discover(settings=settings, vault=vault))
    pods = resources["pods.v1"]
    assert pods.kind == "Pod" and pods.namespaced and pods.preferred
    assert pods.subresources == {"status"}
    assert "po" in pods.shortcuts and "all" in pods.categories
    assert {"list", "watch", "patch"} <= pods.verbs
    widgets = resources["widgets.v1.acme.example"]
    assert widgets.kind == "Widget" and widgets.singular == "widget"
    assert widgets.shortcuts == {"wd"} and widgets.categories == {"acme"}
    assert widgets.subresources == {"status"}
    assert resources["namespaces.v1"].namespaced is False
    assert all("/" not in resource.plural for resource in resources.values())


async def test_discovery_of_selected_groups(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    resources = await scanning.discover(settings=settings, vault=vault, groups={"acme.example"})
    assert {resource.group for resource in resources} == {"acme.example"}
    assert "/api" not in recorder.paths() and "/api/v1" not in recorder.paths()


async def test_aggregated_discovery_takes_two_requests(
    vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    resources = by_name(await scanning.discover(settings=settings, vault=vault))
    assert recorder.paths() == ["/api", "/apis"]
    assert resources["deployments.v1.apps"].subresources == {"status", "scale"}
    assert resources["deployments.v1.apps"].preferred


async def test_identical_discovery_documents_are_decoded_once(
    vault: Vault, settings: OperatorSettings, cluster: Cluster
) -> None:
    first = await scanning.discover(settings=settings, vault=vault)
    again = await scanning.discover(settings=settings, vault=vault)
    assert all(a is b for a, b in zip(first, again, strict=True))  # the same bytes, the same resources
    cluster.delete(
        cluster.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, "widgets.acme.example"
    )
    changed = by_name(await scanning.discover(settings=settings, vault=vault))
    assert "widgets.v1.acme.example" not in changed and "pods.v1" in changed
    document = scanning.decode_discovery(b'{"kind": "APIGroupList", "groups": []}')
    assert document.resources == () and document.doc == {"kind": "APIGroupList", "groups": []}
    empty = scanning.decode_discovery(b"")
    assert empty.resources == () and empty.doc == {}


async def test_preferred_versions() -> None:
    rsp = {
        "resources": [
            {"name": "things", "kind": "Thing", "namespaced": True, "verbs": ["get"]},
            {"name": "things/status", "kind": "Thing", "namespaced": True, "verbs": ["get"]},
            {"name": "things/scale", "kind": "Scale", "namespaced": True, "verbs": ["get"]},
        ]
    }
    [thing] = scanning.parse_resource_list("g", "v2", False, rsp)
    assert thing == Resource(
        "g",
        "v2",
        "things",
        kind="Thing",
        namespaced=True,
        preferred=False,
        subresources=frozenset({"status", "scale"}),
        verbs=frozenset({"get"}),
    )


async def test_resolving_selectors(vault: Vault, settings: OperatorSettings) -> None:
    selectors = [
        Selector("widgets"),
        Selector("wd"),
        Selector("acme.example", "Widget"),
        Selector("pods"),
        Selector(category="acme"),
        Selector(EVERYTHING),
    ]
    resolved = await scanning.scan_resources(selectors, settings=settings, vault=vault)
    names = {selector: {resource.name for resource in resources} for selector, resources in resolved.items()}
    assert names[Selector("widgets")] == {"widgets.v1.acme.example"}
    assert names[Selector("wd")] == {"widgets.v1.acme.example"}
    assert names[Selector("acme.example", "Widget")] == {"widgets.v1.acme.example"}
    assert names[Selector("pods")] == {"pods.v1"}
    assert names[Selector(category="acme")] == {"widgets.v1.acme.example"}
    assert "events.v1" not in names[Selector(EVERYTHING)]
    assert {"pods.v1", "widgets.v1.acme.example"} <= names[Selector(EVERYTHING)]


async def test_discovery_cache(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    cache = scanning.DiscoveryCache()
    assert cache.resources is None
    first = await cache.get(settings=settings, vault=vault)
    count = len(recorder.requests)
    resolved = await scanning.scan_resources([Selector("wd")], settings=settings, vault=vault, cache=cache)
    assert len(recorder.requests) == count
    assert {r.plural for r in resolved[Selector("wd")]} == {"widgets"}
    cache.invalidate()
    second = await cache.get(settings=settings, vault=vault)
    assert len(recorder.requests) > count and first == second


@pytest.fixture
def namespaced_cluster(cluster: Cluster) -> Cluster:
    rtype = cluster.resource("", "v1", "namespaces")
    for name in ["myapp-live", "myapp-pr-123", "myapp-pr-456", "otherapp-live", "otherapp-pr-123"]:
        cluster.create(rtype, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return cluster


async def test_namespace_globs(namespaced_cluster: Cluster, vault: Vault, settings: OperatorSettings) -> None:
    names = await scanning.scan_namespaces(["myapp-*,!*-pr-*,*-pr-123", "default"], settings=settings, vault=vault)
    assert names == {"myapp-live", "myapp-pr-123", "default"}


async def test_namespaces_without_permissions(
    namespaced_cluster: Cluster, vault: Vault, settings: OperatorSettings, recorder: Recorder
) -> None:
    recorder.fail(1, status_response(403, "Forbidden"), when=lambda r: r.path == "/api/v1/namespaces")
    names = await scanning.scan_namespaces(["myapp-*", "exact", "!neg"], settings=settings, vault=vault)
    assert names == {"exact"}


async def test_namespaces_with_scanning_disabled(vault: Vault, settings: OperatorSettings, recorder: Recorder) -> None:
    settings.scanning.disabled = True
    names = await scanning.scan_namespaces(["myapp-*", "exact"], settings=settings, vault=vault)
    assert names == {"exact"}
    assert recorder.requests == []
