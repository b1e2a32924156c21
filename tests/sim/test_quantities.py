"""Resource quantities as the apiserver writes them back: canonical, rounded up to nanos, or kept as sent."""

from __future__ import annotations

import pytest

from kopf_sim.kube.quantities import FORMAT_WRONG, SUFFIX_WRONG, QuantityError, canonical_quantity, parse_quantity


@pytest.mark.parametrize(
    ("given", "written"),
    [
        (None, "0"),  # Go's zero quantity: a null in a map of quantities
        ("0", "0"),
        ("000", "0"),
        ("-0", "0"),
        (0.5, "500m"),  # JSON numbers, as YAML makes them
        (1, "1"),
        (1.0, "1"),
        (2000, "2k"),
        ("1.5", "1500m"),
        (".5", "500m"),
        ("100m", "100m"),
        ("1000m", "1"),
        ("0.1n", "1n"),  # rounded up to nanos
        ("123456789", "123456789"),
        ("1e3", "1e3"),  # exponents stay exponents
        ("1.5e3", "1500"),
        ("1.5Gi", "1536Mi"),  # binary suffixes stay binary for whole numbers of 1024 and more
        ("1024Mi", "1Gi"),
        ("64Mi", "64Mi"),
        ("512Ki", "512Ki"),
        ("0.5Gi", "512Mi"),
        ("0.5Ki", "512"),
        ("0.1Ki", "102400m"),  # and decimal when they are not
        ("1.5Ti", "1536Gi"),
        ("-1Gi", "-1Gi"),
        ("007", "007"),  # a small number in canonical form is kept as it was sent, as Go keeps it
        ("+1", "+1"),
        ("1.G", "1.G"),
    ],
)
def test_canonical_forms(given: object, written: str) -> None:
    assert canonical_quantity(given) == written  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "message"),
    [("lots", FORMAT_WRONG), ("1.2.3", FORMAT_WRONG), ("", FORMAT_WRONG), ("1KM", SUFFIX_WRONG), ("1e", SUFFIX_WRONG)],
)
def test_invalid_quantities_are_refused_with_gos_messages(given: str, message: str) -> None:
    with pytest.raises(QuantityError) as exc:
        canonical_quantity(given)
    assert str(exc.value) == message


def test_values_for_comparisons() -> None:
    assert parse_quantity("1Gi") == 2**30
    assert parse_quantity("1500m") == parse_quantity(1.5)
    assert parse_quantity("nonsense") is None
