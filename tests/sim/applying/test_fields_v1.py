"""managedFields' FieldsV1 encoding: paths to and from the apiserver's JSON."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_sim.writes.applying import (
    decode_fields,
    encode_fields,
    format_path,
)

# ----------------------------------------------------------------------------------------------------


def test_encode_fields_uses_dots_for_owned_nodes_with_children() -> None:
    paths = {
        ("f:spec", "f:replicas"),
        ("f:spec", "f:containers", 'k:{"name":"a"}'),
        ("f:spec", "f:containers", 'k:{"name":"a"}', "f:image"),
        ("f:metadata", "f:finalizers", 'v:"x"'),
    }
    assert encode_fields(paths) == {
        "f:metadata": {"f:finalizers": {'v:"x"': {}}},
        "f:spec": {"f:containers": {'k:{"name":"a"}': {".": {}, "f:image": {}}}, "f:replicas": {}},
    }
    assert decode_fields(encode_fields(paths)) == paths


def test_decode_fields_tolerates_garbage() -> None:
    assert decode_fields(None) == set()
    assert decode_fields({"f:a": "junk", "f:b": {"f:c": {}}}) == {("f:a",), ("f:b", "f:c")}


elements = st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', 'v:"y"', "f:c"])


@settings(max_examples=100, deadline=None)
@given(st.sets(st.lists(elements, min_size=1, max_size=4).map(tuple), max_size=8))
def test_fields_encoding_roundtrips(paths: set[tuple[str, ...]]) -> None:
    assert decode_fields(encode_fields(paths)) == paths


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("f:spec", "f:replicas"), ".spec.replicas"),
        (("f:spec", "f:containers", 'k:{"name":"c"}', "f:image"), '.spec.containers[name="c"].image'),
        (("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}'), '.ports[containerPort=80,protocol="TCP"]'),
        (("f:metadata", "f:finalizers", 'v:"x"'), '.metadata.finalizers[="x"]'),
        (("f:data", "f:.dockerconfigjson"), ".data..dockerconfigjson"),
        (("f:items", "i:3"), ".items[3]"),
    ],
)
def test_format_path(path: tuple[str, ...], text: str) -> None:
    assert format_path(path) == text


# ----------------------------------------------------------------------------------------------------
