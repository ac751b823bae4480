"""Go duration parsing and formatting."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.config import Duration, DurationError

_S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "nanoseconds", "canonical"),
    [
        ("30s", 30 * _S, "30s"),
        ("1m30s", 90 * _S, "1m30s"),
        ("90s", 90 * _S, "1m30s"),
        ("1h", 3600 * _S, "1h0m0s"),
        ("2h45m", (2 * 3600 + 45 * 60) * _S, "2h45m0s"),
        ("1.5h", 5400 * _S, "1h30m0s"),
        ("500ms", 500_000_000, "500ms"),
        ("1.5s", 1_500_000_000, "1.5s"),
        ("300ns", 300, "300ns"),
        ("1500ns", 1500, "1.5µs"),
        ("2us", 2000, "2µs"),
        ("2µs", 2000, "2µs"),
        ("2μs", 2000, "2µs"),
        ("-1m", -60 * _S, "-1m0s"),
        ("+5s", 5 * _S, "5s"),
        ("0", 0, "0s"),
        ("0s", 0, "0s"),
        (".5s", 500_000_000, "500ms"),
        ("1h1m1.001s", 3661 * _S + 1_000_000, "1h1m1.001s"),
    ],
)
def test_parse_and_go_formatting(text: str, nanoseconds: int, canonical: str) -> None:
    duration = Duration.parse(text)
    assert duration.nanoseconds == nanoseconds
    assert str(duration) == canonical
    assert Duration.parse(canonical) == duration


@pytest.mark.parametrize("text", ["", "1", "s", "1x", "1.s.", "1 s", "-", ".s", "3000000h"])
def test_rejects_malformed_text(text: str) -> None:
    with pytest.raises(DurationError) as info:
        Duration.parse(text)
    assert repr(text) in str(info.value)


@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_formatting_round_trips(nanoseconds: int) -> None:
    duration = Duration(nanoseconds)
    assert Duration.parse(str(duration)) == duration


@given(
    hours=st.integers(0, 1000),
    minutes=st.integers(0, 59),
    millis=st.integers(0, 59_999),
)
def test_component_sums(hours: int, minutes: int, millis: int) -> None:
    text = f"{hours}h{minutes}m{millis}ms"
    expected = (hours * 3600 + minutes * 60) * _S + millis * 1_000_000
    assert Duration.parse(text).nanoseconds == expected
