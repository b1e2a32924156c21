import re

import pytest

import kopf
from kopf._cogs.structs.references import (
    EVERYTHING,
    Marker,
    NamespaceName,
    Resource,
    Selector,
    match_namespace,
    match_namespaces,
    select_specific_namespaces,
)

KEX = Resource(
    "kopf.dev",
    "v1",
    "kopfexamples",
    kind="KopfExample",
    singular="kopfexample",
    shortcuts=frozenset({"kex", "kexes"}),
    categories=frozenset({"all", "kopf"}),
    namespaced=True,
)
KEX_OLD = Resource(
    "kopf.dev", "v1beta1", "kopfexamples", kind="KopfExample", singular="kopfexample", namespaced=True, preferred=False
)
PODS = Resource(
    "",
    "v1",
    "pods",
    kind="Pod",
    singular="pod",
    shortcuts=frozenset({"po"}),
    categories=frozenset({"all"}),
    namespaced=True,
    subresources=frozenset({"status"}),
)
EVENTS = Resource("", "v1", "events", kind="Event", singular="event", shortcuts=frozenset({"ev"}), namespaced=True)
NEW_EVENTS = Resource("events.k8s.io", "v1", "events", kind="Event", singular="event", namespaced=True)
METRIC_PODS = Resource("metrics.k8s.io", "v1beta1", "pods", kind="PodMetrics", singular="", namespaced=True)
DEPLOYMENTS = Resource(
    "apps",
    "v1",
    "deployments",
    kind="Deployment",
    singular="deployment",
    shortcuts=frozenset({"deploy"}),
    categories=frozenset({"all"}),
    namespaced=True,
)
NAMESPACES = Resource(
    "", "v1", "namespaces", kind="Namespace", singular="namespace", shortcuts=frozenset({"ns"}), namespaced=False
)
WIDGETS_A = Resource("a.example.com", "v1", "widgets", kind="Widget", singular="widget")
WIDGETS_B = Resource("b.example.com", "v1", "widgets", kind="Widget", singular="widget")
ALL = [KEX, KEX_OLD, PODS, EVENTS, NEW_EVENTS, METRIC_PODS, DEPLOYMENTS, NAMESPACES, WIDGETS_A, WIDGETS_B]


# Resource


def test_resource_defaults() -> None:
    resource = Resource("group", "version", "plural")
    assert resource.kind is None
    assert resource.singular is None
    assert resource.shortcuts == frozenset()
    assert resource.categories == frozenset()
    assert resource.subresources == frozenset()
    assert resource.namespaced is None
    assert resource.preferred is True
    assert resource.verbs == frozenset()


def test_resource_is_hashable_and_comparable() -> None:
    assert Resource("g", "v", "p") == Resource("g", "v", "p")
    assert len({Resource("g", "v", "p"), Resource("g", "v", "p")}) == 1
    assert kopf.Resource is Resource


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        (KEX, "kopf.dev/v1"),
        (PODS, "v1"),
        (DEPLOYMENTS, "apps/v1"),
    ],
)
def test_resource_api_version(resource: Resource, expected: str) -> None:
    assert resource.api_version == expected


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        (KEX, "kopfexamples.v1.kopf.dev"),
        (PODS, "pods.v1"),
    ],
)
def test_resource_name(resource: Resource, expected: str) -> None:
    assert resource.name == expected
    assert str(resource) == expected


@pytest.mark.parametrize(
    ("resource", "kwargs", "expected"),
    [
        (KEX, {}, "/apis/kopf.dev/v1/kopfexamples"),
        (KEX, {"namespace": "ns1"}, "/apis/kopf.dev/v1/namespaces/ns1/kopfexamples"),
        (KEX, {"namespace": "ns1", "name": "n1"}, "/apis/kopf.dev/v1/namespaces/ns1/kopfexamples/n1"),
        (
            KEX,
            {"namespace": "ns1", "name": "n1", "subresource": "status"},
            "/apis/kopf.dev/v1/namespaces/ns1/kopfexamples/n1/status",
        ),
        (PODS, {}, "/api/v1/pods"),
        (PODS, {"namespace": "ns1", "name": "p1"}, "/api/v1/namespaces/ns1/pods/p1"),
        (NAMESPACES, {"namespace": "ignored", "name": "ns1"}, "/api/v1/namespaces/ns1"),
        (PODS, {"server": "https://k8s:6443/"}, "https://k8s:6443/api/v1/pods"),
        (PODS, {"params": {"watch": "true", "resourceVersion": "12"}}, "/api/v1/pods?watch=true&resourceVersion=12"),
        (PODS, {"params": {}}, "/api/v1/pods"),
    ],
)
def test_resource_urls(resource: Resource, kwargs: dict[str, str], expected: str) -> None:
    assert resource.get_url(**kwargs) == expected  # type: ignore[arg-type]


def test_resource_url_escapes_names() -> None:
    assert PODS.get_url(namespace="ns", name="a/b c") == "/api/v1/namespaces/ns/pods/a%2Fb%20c"


def test_resource_url_subresource_requires_name() -> None:
    with pytest.raises(ValueError, match="named"):
        PODS.get_url(namespace="ns1", subresource="status")


# Selector parsing: every documented notation.


@pytest.mark.parametrize(
    ("args", "kwargs", "group", "version", "name"),
    [
        (("kopf.dev", "v1", "kopfexamples"), {}, "kopf.dev", "v1", "kopfexamples"),
        (("kopf.dev/v1", "kopfexamples"), {}, "kopf.dev", "v1", "kopfexamples"),
        (("apps", "v1", "deployments"), {}, "apps", "v1", "deployments"),
        (("apps/v1", "deployments"), {}, "apps", "v1", "deployments"),
        (("", "v1", "pods"), {}, "", "v1", "pods"),
        (("v1", "pods"), {}, "", "v1", "pods"),
        (("kopf.dev", "kopfexamples"), {}, "kopf.dev", None, "kopfexamples"),
        (("apps", "deployments"), {}, "apps", None, "deployments"),
        (("kopfexamples.kopf.dev",), {}, "kopf.dev", None, "kopfexamples"),
        (("deployments.apps",), {}, "apps", None, "deployments"),
        (("deployments.v1.apps",), {}, "apps", "v1", "deployments"),
        (("pods.v1",), {}, "", "v1", "pods"),
        (("pods.metrics.k8s.io",), {}, "metrics.k8s.io", None, "pods"),
        (("metrics.k8s.io", "pods"), {}, "metrics.k8s.io", None, "pods"),
        (("kopfexamples",), {}, None, None, "kopfexamples"),
        (("KopfExample",), {}, None, None, "KopfExample"),
        (("kex",), {}, None, None, "kex"),
        (("pods",), {}, None, None, "pods"),
        ((), {"group": "kopf.dev", "version": "v1", "any_name": "kex"}, "kopf.dev", "v1", "kex"),
        (("kopf.dev", "v1", EVERYTHING), {}, "kopf.dev", "v1", EVERYTHING),
        (("kopf.dev/v1", EVERYTHING), {}, "kopf.dev", "v1", EVERYTHING),
        (("kopf.dev", EVERYTHING), {}, "kopf.dev", None, EVERYTHING),
        ((EVERYTHING,), {}, None, None, EVERYTHING),
    ],
)
def test_selector_positional_forms(
    args: tuple[str, ...], kwargs: dict[str, str], group: str | None, version: str | None, name: str | None
) -> None:
    selector = Selector(*args, **kwargs)
    assert selector.group == group
    assert selector.version == version
    assert selector.any_name == name
    assert selector.kind is selector.plural is selector.singular is None
    assert selector.shortcut is selector.category is None


@pytest.mark.parametrize("kw", ["kind", "plural", "singular", "shortcut", "category"])
def test_selector_specific_names(kw: str) -> None:
    selector = Selector(**{kw: "xyz"})
    assert getattr(selector, kw) == "xyz"
    assert selector.any_name is None
    assert selector.group is None
    assert selector.version is None


@pytest.mark.parametrize(
    ("args", "kwargs", "group", "version"),
    [
        (("kopf.dev",), {"kind": "KopfExample"}, "kopf.dev", None),
        (("kopf.dev/v1",), {"kind": "KopfExample"}, "kopf.dev", "v1"),
        (("kopf.dev", "v1"), {"plural": "kopfexamples"}, "kopf.dev", "v1"),
        (("v1",), {"kind": "Pod"}, "", "v1"),
        ((), {"group": "apps", "version": "v1", "kind": "Deployment"}, "apps", "v1"),
        ((), {"group": "apps", "category": "all"}, "apps", None),
    ],
)
def test_selector_api_positionals_with_keyword_names(
    args: tuple[str, ...], kwargs: dict[str, str], group: str, version: str | None
) -> None:
    selector = Selector(*args, **kwargs)
    assert selector.group == group
    assert selector.version == version
    assert selector.any_name is None


def test_selector_keyword_group_version() -> None:
    selector = Selector("kopfexamples", group="kopf.dev", version="v1")
    assert (selector.group, selector.version, selector.any_name) == ("kopf.dev", "v1", "kopfexamples")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),  # no name at all
        (("kopf.dev", "v1"), {}),  # group+version, but no name
        (("kopf.dev/v1",), {}),  # group/version, but no name
        ((), {"kind": "KopfExample", "plural": "kopfexamples"}),
        ((), {"plural": "kopfexamples", "category": "all"}),
        ((EVERYTHING,), {"category": "all"}),
        (("kopf.dev", "v1", "kopfexamples"), {"group": "kopf.dev"}),  # group twice
        (("kopf.dev/v1", "kopfexamples"), {"version": "v1"}),  # version twice
        (("kopf.dev", "v1", "kopfexamples"), {"kind": "KopfExample"}),  # name twice
        ((None, None, "kopfexamples"), {}),  # a gap in the positionals
        ((None, "kopfexamples"), {}),
        ((EVERYTHING, "kopfexamples"), {}),  # a marker as a group
        (("kopf.dev", EVERYTHING, "kopfexamples"), {}),  # a marker as a version
        (("kopf.dev/v1", "v1", "kopfexamples"), {}),  # a version twice
        (("kopf.dev/", "kopfexamples"), {}),  # an empty version
        ((), {"kind": ""}),  # an empty name
        (("kopf.dev", "v1", "kopf.examples"), {}),  # a malformed name
        (("kopf.dev", "v1/v2", "kopfexamples"), {}),  # a malformed version
        ((), {"version": "", "kind": "X"}),  # an empty version
        (("kopf.dev", EVERYTHING), {"kind": "X"}),
        (("kopf.dev", "v1", "kex"), {"any_name": "kex"}),
    ],
)
def test_selector_rejects_ambiguous_or_invalid(args: tuple[str, ...], kwargs: dict[str, str]) -> None:
    with pytest.raises(TypeError):
        Selector(*args, **kwargs)


def test_selector_is_hashable_and_comparable() -> None:
    assert Selector("kopf.dev", "v1", "kex") == Selector("kopf.dev/v1", "kex")
    assert len({Selector("pods"), Selector("pods")}) == 1
    assert Selector("pods") != Selector(plural="pods")


def test_selector_repr_shows_only_the_given_parts() -> None:
    assert repr(Selector("kopf.dev/v1", "kex")) == "Selector(group='kopf.dev', version='v1', any_name='kex')"
    assert repr(Selector(EVERYTHING)) == "Selector(any_name=kopf.EVERYTHING)"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (Selector("kopf.dev", "v1", "kex"), "kopf.dev/v1"),
        (Selector("v1", "pods"), "v1"),
        (Selector("kopf.dev", "kex"), None),
        (Selector("kex"), None),
    ],
)
def test_selector_api_version(selector: Selector, expected: str | None) -> None:
    assert selector.api_version == expected


@pytest.mark.parametrize(
    ("selector", "specific"),
    [
        (Selector("kex"), True),
        (Selector(kind="Pod"), True),
        (Selector(category="all"), False),
        (Selector(EVERYTHING), False),
        (Selector("kopf.dev", EVERYTHING), False),
    ],
)
def test_selector_specificity(selector: Selector, specific: bool) -> None:
    assert selector.is_specific is specific


def test_everything_marker() -> None:
    assert kopf.EVERYTHING is EVERYTHING is Marker.EVERYTHING
    assert repr(EVERYTHING) == "kopf.EVERYTHING"


# Selector matching against the discovered resources.


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (Selector("kopfexamples"), {KEX}),
        (Selector("kopfexample"), {KEX}),
        (Selector("KopfExample"), {KEX}),
        (Selector("kex"), {KEX}),
        (Selector("kexes"), {KEX}),
        (Selector("kopf.dev", "kopfexamples"), {KEX}),
        (Selector("kopf.dev", "v1", "kopfexamples"), {KEX}),
        (Selector("kopf.dev", "v1beta1", "kopfexamples"), {KEX_OLD}),  # explicitly non-preferred
        (Selector("kopfexamples.kopf.dev"), {KEX}),
        (Selector("kopfexamples.v1beta1.kopf.dev"), {KEX_OLD}),
        (Selector(kind="KopfExample"), {KEX}),
        (Selector(plural="kopfexamples"), {KEX}),
        (Selector(singular="kopfexample"), {KEX}),
        (Selector(shortcut="kex"), {KEX}),
        (Selector(kind="kopfexamples"), set()),  # specific keywords check only their names
        (Selector(plural="KopfExample"), set()),
        (Selector(shortcut="kopfexample"), set()),
        (Selector("deployments"), {DEPLOYMENTS}),
        (Selector("deploy"), {DEPLOYMENTS}),
        (Selector("apps", "deployments"), {DEPLOYMENTS}),
        (Selector("deployments.apps"), {DEPLOYMENTS}),
        (Selector("StatefulSet"), set()),
        (Selector("pod"), {PODS}),
        (Selector("po"), {PODS}),
        (Selector("v1", "pods"), {PODS}),
        (Selector("", "v1", "pods"), {PODS}),
        (Selector("pods.v1"), {PODS}),
        (Selector("pods.metrics.k8s.io"), {METRIC_PODS}),
        (Selector("metrics.k8s.io", "pods"), {METRIC_PODS}),
        (Selector("nonexistent"), set()),
    ],
)
def test_selector_selects_specific_resources(selector: Selector, expected: set[Resource]) -> None:
    assert selector.select(ALL) == expected
    assert selector.ambiguities(ALL) == frozenset()


def test_core_v1_has_priority_over_other_groups() -> None:
    # pods.v1 vs. pods.v1beta1.metrics.k8s.io: the intention is obvious.
    assert Selector("pods").select(ALL) == {PODS}
    # events.v1 vs. events.v1.events.k8s.io: the same.
    assert Selector("events").select(ALL) == {EVENTS}
    assert Selector("Event").select(ALL) == {EVENTS}


def test_ambiguous_specific_names_select_nothing() -> None:
    selector = Selector("widgets")
    assert selector.select(ALL) == frozenset()
    assert selector.ambiguities(ALL) == {WIDGETS_A, WIDGETS_B}
    assert Selector("Widget").select(ALL) == frozenset()


def test_ambiguities_are_resolved_by_groups() -> None:
    assert Selector("a.example.com", "widgets").select(ALL) == {WIDGETS_A}
    assert Selector("widgets.b.example.com").select(ALL) == {WIDGETS_B}


def test_preferred_versions_only_when_no_version() -> None:
    assert Selector("kopfexamples").select([KEX, KEX_OLD]) == {KEX}
    assert Selector("kopfexamples").select([KEX_OLD]) == frozenset()


def test_categories_select_multiple_resources() -> None:
    assert Selector(category="all").select(ALL) == {KEX, PODS, DEPLOYMENTS}
    assert Selector(category="all").ambiguities(ALL) == frozenset()
    assert Selector("apps", category="all").select(ALL) == {DEPLOYMENTS}
    assert Selector(category="kopf").select(ALL) == {KEX}
    assert Selector(category="none").select(ALL) == frozenset()


def test_everything_excludes_core_events_and_non_preferred() -> None:
    selected = Selector(EVERYTHING).select(ALL)
    assert selected == set(ALL) - {EVENTS, KEX_OLD}
    assert NEW_EVENTS in selected  # only the core v1 events are excluded.
    assert Selector(EVERYTHING).ambiguities(ALL) == frozenset()


def test_core_events_are_served_when_named_explicitly() -> None:
    assert Selector("v1", "events").select(ALL) == {EVENTS}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (Selector("kopf.dev", "v1", EVERYTHING), {KEX}),
        (Selector("kopf.dev/v1", EVERYTHING), {KEX}),
        (Selector("kopf.dev", EVERYTHING), {KEX}),
        (Selector("kopf.dev", "v1beta1", EVERYTHING), {KEX_OLD}),
        (Selector("v1", EVERYTHING), {PODS, NAMESPACES}),
    ],
)
def test_everything_within_group(selector: Selector, expected: set[Resource]) -> None:
    assert selector.select(ALL) == expected


def test_check_resource_is_per_resource() -> None:
    selector = Selector("widgets")
    assert selector.check_resource(WIDGETS_A)
    assert selector.check_resource(WIDGETS_B)
    assert not selector.check_resource(PODS)


def test_select_accepts_any_iterable() -> None:
    assert Selector("pods").select(iter(ALL)) == {PODS}


# Namespace patterns.


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("ns1", "ns1", True),
        ("ns1", "ns2", False),
        ("ns*", "ns2", True),
        ("ns?", "ns22", False),
        ("*-pr-123-*", "app-pr-123-x", True),
        ("*-pr-123-*", "app-pr-456-x", False),
        ("!*-pr-123-*", "app-pr-123-x", False),
        ("!*-pr-123-*", "app-live", True),
        # The documented example: the first glob is decisive, the rightmost matching one wins.
        ("myapp-*,!*-pr-*,*-pr-123", "myapp-live", True),
        ("myapp-*,!*-pr-*,*-pr-123", "myapp-pr-456", False),
        ("myapp-*,!*-pr-*,*-pr-123", "myapp-pr-123", True),
        ("myapp-*,!*-pr-*,*-pr-123", "otherapp-live", False),
        ("myapp-*,!*-pr-*,*-pr-123", "otherapp-pr-123", False),
        ("!a*,ab*", "ab1", True),
        ("!a*,ab*", "ac1", False),
        ("!a*,ab*", "b1", True),
        (re.compile(r"ns\d+"), "ns12", True),
        (re.compile(r"ns\d+"), "ns12x", False),
    ],
)
def test_namespace_patterns(pattern: str | re.Pattern[str], name: str, expected: bool) -> None:
    assert match_namespace(name, pattern) is expected


def test_multiple_namespace_patterns() -> None:
    assert match_namespaces("ns1", ["ns1", "ns2"])
    assert match_namespaces("ns2", ["ns1", "ns2"])
    assert not match_namespaces("ns3", ["ns1", "ns2"])
    assert not match_namespaces("ns3", [])


def test_specific_namespaces_exclude_patterns() -> None:
    patterns = ["ns1", "ns*", "n?", "!ns2", "a,b", re.compile("x"), "ns3"]
    assert select_specific_namespaces(patterns) == {NamespaceName("ns1"), NamespaceName("ns3")}
