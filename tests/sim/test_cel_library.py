"""The Kubernetes CEL libraries that rules use, as the simulator registers them with the bindings."""

from __future__ import annotations

from typing import Any

import cel
import pytest

from kopf_sim.cel.library import FUNCTIONS
from kopf_sim.cel.programs import CompileError, compile_expression, evaluation_error, for_evaluation


def evaluate(source: str, value: Any = None) -> Any:
    compile_expression(source, {"self"})  # what the apiserver accepts at CRD creation
    program = cel.compile(for_evaluation(source))
    return program.execute(cel.Context(variables={"self": value}, functions=FUNCTIONS))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("'Hello'.lowerAscii() + 'x'.upperAscii()", "helloX"),
        ("'a,b,c'.split(',')", ["a", "b", "c"]),
        ("'a,b,c'.split(',', 2)", ["a", "b,c"]),
        ("['a', 'b'].join('-')", "a-b"),
        ("'  x '.trim()", "x"),
        ("'hello'.indexOf('l')", 2),
        ("'hello'.lastIndexOf('l')", 3),
        ("'hello'.substring(1, 3)", "el"),
        ("'hello'.charAt(1)", "e"),
        ("'aaa'.replace('a', 'b', 2)", "bba"),
        ("'%s has %d items'.format(['list', 3])", "list has 3 items"),
        ("[1, 2, 3].isSorted() && ![2, 1].isSorted()", True),
        ("[1, 2, 3].sum()", 6),
        ("[3, 1, 2].min() + [3, 1, 2].max()", 4),
        ("[1, 2, 3, 4].slice(1, 3)", [2, 3]),
        ("[1, 2, 1].indexOf(1) + [1, 2, 1].lastIndexOf(1)", 2),
        ("'abc123'.find('[0-9]+')", "123"),
        ("'a1b22'.findAll('[0-9]+')", ["1", "22"]),
        ("'web-1'.matches('^[a-z0-9-]+$') && !'Web'.matches('^[a-z]+$')", True),
        ("isQuantity('1Gi') && !isQuantity('1 Gi')", True),
        ("quantity('1Gi') == quantity('1024Mi')", True),
        ("quantity('500m').isLessThan(quantity('1'))", True),
        ("quantity('2').compareTo(quantity('1'))", 1),
        ("quantity('1Gi').add(quantity('1Gi')).isGreaterThan(quantity('2G'))", True),
        ("quantity('1.5').isInteger()", False),
        ("quantity('3k').asInteger()", 3000),
        ("quantity('-1').sign()", -1),
        ("url('https://example.com:8443/a?x=1').getHostname()", "example.com"),
        ("url('https://example.com:8443/a?x=1').getPort()", "8443"),
        ("url('https://example.com:8443/a?x=1').getEscapedPath()", "/a"),
        ("url('https://example.com/a?x=1&x=2').getQuery()", {"x": ["1", "2"]}),
        ("isURL('https://example.com') && !isURL('example.com')", True),
    ],
)
def test_a_library_function_evaluates_as_in_kubernetes(source: str, expected: Any) -> None:
    assert evaluate(source) == expected


def test_matches_inside_a_string_is_not_rewritten() -> None:
    assert evaluate("self == 'x.matches(y)'", "x.matches(y)") is True


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("quantity('1 Gi')", "quantities must match the regular expression"),
        ("url('no url')", "URL parse error during conversion from string"),
        ("[].min()", "min called on empty list"),
        ("'hello'.substring(4, 2)", "index out of range: 2"),
        ("'abc'.matches('(?P<x>a)(?P=x)')", "error parsing regexp"),
    ],
)
def test_a_library_error_reads_as_the_apiservers(source: str, message: str) -> None:
    with pytest.raises(Exception) as info:
        evaluate(source)
    assert message in evaluation_error(info.value)


def test_an_unknown_function_does_not_compile() -> None:
    with pytest.raises(CompileError, match="undeclared reference to 'lowerAsci'"):
        compile_expression("self.lowerAsci()", {"self"})
