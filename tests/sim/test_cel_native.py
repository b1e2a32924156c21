"""The Python evaluator of CEL rules (kopf_sim.cel.native) only ever confirms what the bindings would say.

Differentially: on generated values, whenever it calls a rule passed, the bindings (with the same library)
evaluate the rule to ``true``; and it does confirm the usual valid values (else it would save nothing).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_sim.cel.library import FUNCTIONS
from kopf_sim.cel.native import Undecided, compile_native
from kopf_sim.cel.programs import for_evaluation, load_bindings

cel = pytest.importorskip("cel")

RULES = [
    "self.minReplicas <= self.maxReplicas",
    "!has(self.mode) || self.mode in ['Fast', 'Slow']",
    "has(self.tls) == has(self.endpoint)",
    "self.replicas >= self.minReplicas",
    "self.replicas <= 10 && self.replicas >= 0",
    "self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
    "self.name.size() <= 63",
    "!self.image.endsWith(':latest') && self.image.contains(':')",
    "isQuantity(self.memory) && quantity(self.memory).isLessThan(quantity('1Gi'))",
    "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'",
    "self.tags.isSorted()",
    "self.tags.all(t, t.lowerAscii() == t)",
    "self.labels.all(k, !k.startsWith('kubernetes.io/'))",
    "self.ports.exists(p, p.name == 'http')",
    "self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",
    "self.replicas == 1 || self.replicas / 2 > 1",
    "self.replicas % 3 == 0 ? self.mode == 'Fast' : true",
    "self.replicas + 1 > self.minReplicas - 1",
    "-self.replicas < 0",
    "self.name + '-x' != 'a-x'",
    "self.tags == ['alpha', 'beta']",
    "self.mode in self.tags",
    "'team' in self.labels",
    "size(self.tags) == 2",
    "self.tags.map(t, t.size()).all(n, n > 0)",
    "self.tags.filter(t, t.startsWith('a')).size() >= 1",
    "self.maybe == null",
    "self.tls == true",
    "self.replicas == 3.0",
    "self.replicas < 'a'",
    "'\\u00e9t\\u00e9'.size() == 3",
    "self.name > 'a'",
    "self.nested.deep.value >= 0",
    "has(self.nested.deep)",
    "self.replicas > 0 || self.missing > 0",
    "self.missing > 0 || self.replicas > 0",
    "self.missing > 0 && self.replicas > 0",
    "self.ports[0].port > 0",
    "self.labels['team'] == 'a'",
    "self.tags.exists_one(t, t == self.missing)",
]

_KEYS = ["replicas", "minReplicas", "maxReplicas", "mode", "tls", "endpoint", "name", "image", "memory"]
_KEYS += ["tags", "labels", "ports", "maybe", "nested"]
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=False),
    st.sampled_from(["Fast", "Slow", "web-1", "Web", "nginx:1.2", "nginx:latest", "512Mi", "2Gi", "x"]),
    st.sampled_from(["https://example.com/x", "http://a", "alpha", "beta", "", "kubernetes.io/x", "été"]),
    st.text(max_size=5),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["name", "port", "team", "deep", "value", "a"]), inner, max_size=3),
    ),
    max_leaves=8,
)
_SELVES = st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=len(_KEYS))


def _cel_verdict(source: str, self_value: Any) -> Any:
    bindings = load_bindings()
    context = bindings.Context(variables={"self": self_value}, functions=FUNCTIONS)
    try:
        return bindings.compile(for_evaluation(source)).execute(context)
    except Exception as exc:  # the bindings' errors: anything but "true"
        return exc


def _native_verdict(source: str, self_value: Any) -> bool | None:
    native = compile_native(source)
    assert native is not None, source
    try:
        return native({"self": self_value})
    except Undecided:
        return None


@settings(max_examples=300)
@given(source=st.sampled_from(RULES), self_value=_SELVES)
def test_a_confirmed_pass_is_a_pass_for_the_bindings(source: str, self_value: dict[str, Any]) -> None:
    if _native_verdict(source, self_value):
        assert _cel_verdict(source, self_value) is True, (source, self_value)


VALID = {
    "replicas": 3,
    "minReplicas": 1,
    "maxReplicas": 5,
    "mode": "Fast",
    "tls": True,
    "endpoint": "https://example.com/x",
    "name": "web-1",
    "image": "nginx:1.25",
    "memory": "512Mi",
    "tags": ["alpha", "beta"],
    "labels": {"team": "a"},
    "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
    "maybe": None,
    "nested": {"deep": {"value": 1}},
}


@pytest.mark.parametrize("source", RULES)
def test_the_native_verdict_agrees_on_a_valid_object(source: str) -> None:
    native, bound = _native_verdict(source, VALID), _cel_verdict(source, VALID)
    if bound is True:
        assert native in (True, None)
    else:
        assert native is not True


@pytest.mark.parametrize(
    "source",
    [rule for rule in RULES if "missing" not in rule and "3.0" not in rule and "< 'a'" not in rule][:30],
)
def test_the_usual_rules_are_confirmed_natively(source: str) -> None:
    if _cel_verdict(source, VALID) is True:
        assert _native_verdict(source, VALID) is True


@pytest.mark.parametrize(
    "source",
    [
        "int(self.x) > 0",
        "self.x.?y",
        "self.labels == {'team': 'a'}",
        "{'a': 1}.a == 1",
        "b'abc' == b'abc'",
        "r'a' == 'a'",
        "1u == 1u",
        "'''a'''",
    ],
)
def test_what_it_does_not_know_is_left_to_the_bindings(source: str) -> None:
    assert compile_native(source) is None
