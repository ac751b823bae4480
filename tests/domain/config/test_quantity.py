"""Kubernetes quantity parsing and canonical formatting."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.config import Quantity, QuantityError, QuantityFormat
from nrirp.domain.config.errors import InvalidValue


@pytest.mark.parametrize(
    ("text", "value", "canonical"),
    [
        ("750m", Fraction(3, 4), "750m"),
        ("2", Fraction(2), "2"),
        ("1.5", Fraction(3, 2), "1500m"),
        ("0.5", Fraction(1, 2), "500m"),
        (".5", Fraction(1, 2), "500m"),
        ("5.", Fraction(5), "5"),
        ("+3", Fraction(3), "3"),
        ("-250m", Fraction(-1, 4), "-250m"),
        ("2Gi", Fraction(2 * 1024**3), "2Gi"),
        ("1536Mi", Fraction(1536 * 1024**2), "1536Mi"),
        ("1024Ki", Fraction(1024**2), "1Mi"),
        ("1.5Gi", Fraction(3 * 1024**3, 2), "1536Mi"),
        ("100Ki", Fraction(102400), "100Ki"),
        ("512", Fraction(512), "512"),
        ("500M", Fraction(500 * 10**6), "500M"),
        ("1500", Fraction(1500), "1500"),
        ("1000", Fraction(1000), "1k"),
        ("1e3", Fraction(1000), "1e3"),
        ("1E3", Fraction(1000), "1e3"),
        ("1.5e3", Fraction(1500), "1500"),
        ("2e-3", Fraction(2, 1000), "2e-3"),
        ("1E", Fraction(10**18), "1E"),
        ("3Ei", Fraction(3 * 1024**6), "3Ei"),
        ("100n", Fraction(100, 10**9), "100n"),
        ("7u", Fraction(7, 10**6), "7u"),
        ("0", Fraction(0), "0"),
        ("0Gi", Fraction(0), "0"),
        ("1k", Fraction(1000), "1k"),
    ],
)
def test_parse_and_canonical_form(text: str, value: Fraction, canonical: str) -> None:
    quantity = Quantity.parse(text)
    assert quantity.value == value
    assert str(quantity) == canonical
    assert Quantity.parse(canonical) == quantity


@pytest.mark.parametrize(
    "text",
    ["", " 1", "1 ", "abc", "1K", "1kb", "1e", "1.2.3", "--1", "1Gi1", "m", ".", "0x10", "1ee3"],
)
def test_rejects_malformed_text(text: str) -> None:
    with pytest.raises(QuantityError) as info:
        Quantity.parse(text)
    assert repr(text) in str(info.value)


def test_rejects_absurd_exponents_and_magnitudes() -> None:
    with pytest.raises(QuantityError, match="exponent out of range"):
        Quantity.parse("1e999999")
    with pytest.raises(QuantityError, match="value out of range"):
        Quantity.parse("100Ei")


def test_sub_nano_precision_rounds_away_from_zero() -> None:
    assert Quantity.parse("1.0000000001").value == Fraction(1_000_000_001, 10**9)
    assert Quantity.parse("-0.0000000001").value == Fraction(-1, 10**9)


def test_milli_and_integer_values_round_up() -> None:
    assert Quantity.parse("750m").milli_value() == 750
    assert Quantity.parse("1.5").milli_value() == 1500
    assert Quantity.parse("1u").milli_value() == 1
    assert Quantity.parse("100m").int_value() == 1
    assert Quantity.parse("2Gi").int_value() == 2 * 1024**3
    assert Quantity.from_milli(250) == Quantity.parse("250m")


def test_numbers_from_yaml_become_quantities() -> None:
    assert Quantity.from_config(2) == Quantity.parse("2")
    assert Quantity.from_config(1.5) == Quantity.parse("1500m")
    assert Quantity.from_config("2Gi").format is QuantityFormat.BINARY_SI
    for bad in (True, None, [1], float("nan"), "x"):
        with pytest.raises(InvalidValue):
            Quantity.from_config(bad)


def test_equality_and_order_ignore_the_format() -> None:
    assert Quantity.parse("1Ki") == Quantity.parse("1024")
    assert Quantity.parse("1k") < Quantity.parse("1Ki")
    assert len({Quantity.parse("1e3"), Quantity.parse("1k")}) == 1


_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4}


@given(
    mantissa=st.integers(min_value=-(10**6), max_value=10**6),
    suffix=st.sampled_from(sorted(_DECIMAL_SUFFIXES)),
)
def test_decimal_suffix_values(mantissa: int, suffix: str) -> None:
    quantity = Quantity.parse(f"{mantissa}{suffix}")
    assert quantity.value == Fraction(mantissa) * Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    assert Quantity.parse(str(quantity)) == quantity


@given(
    mantissa=st.integers(min_value=0, max_value=10**6),
    suffix=st.sampled_from(sorted(_BINARY_SUFFIXES)),
)
def test_binary_suffix_values(mantissa: int, suffix: str) -> None:
    quantity = Quantity.parse(f"{mantissa}{suffix}")
    assert quantity.value == mantissa * 1024 ** _BINARY_SUFFIXES[suffix]
    assert Quantity.parse(str(quantity)) == quantity


@given(
    number=st.decimals(
        min_value=Decimal("-1e9"), max_value=Decimal("1e9"), places=9, allow_nan=False
    ),
    exponent=st.integers(min_value=-12, max_value=9),
    marker=st.sampled_from(["e", "E"]),
)
def test_exponent_form_round_trips(number: Decimal, exponent: int, marker: str) -> None:
    text = f"{number:f}{marker}{exponent}"
    quantity = Quantity.parse(text)
    exact = Fraction(number) * Fraction(10) ** exponent
    # rounded to nano-units at most, away from zero
    assert abs(quantity.value - exact) < Fraction(1, 10**9)
    assert abs(quantity.value) >= abs(exact)
    assert Quantity.parse(str(quantity)) == quantity


@given(
    nanos=st.integers(min_value=-(10**20), max_value=10**20),
    fmt=st.sampled_from(list(QuantityFormat)),
)
def test_formatting_is_canonical_and_lossless(nanos: int, fmt: QuantityFormat) -> None:
    quantity = Quantity(Fraction(nanos, 10**9), fmt)
    text = str(quantity)
    parsed = Quantity.parse(text)
    assert parsed == quantity
    # The parsed text's canonical form is a fixed point. It can differ from ``text`` itself:
    # as in Kubernetes, a BinarySI amount that is no multiple of 1024 prints without a suffix
    # and parses back as DecimalSI (see test_binary_amount_without_binary_form).
    assert str(Quantity.parse(str(parsed))) == str(parsed)
    if fmt is QuantityFormat.DECIMAL_SI:
        assert str(parsed) == text


def test_binary_amount_without_binary_form() -> None:
    quantity = Quantity(Fraction(3_125_000), QuantityFormat.BINARY_SI)
    assert str(quantity) == "3125000"  # Kubernetes: not a multiple of 1024, no binary suffix
    parsed = Quantity.parse("3125000")
    assert parsed == quantity
    assert parsed.format is QuantityFormat.DECIMAL_SI
    assert str(parsed) == "3125k"
