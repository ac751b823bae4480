"""Runtime NRI level: parsing, the containerd table, the mask each level accepts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri import api, versions
from nrirp.adapters.nri.versions import LevelSource, Version


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v2.2.1", Version(2, 2, 1)),
        ("1.7.24~ds1", Version(1, 7, 24)),
        ("2.0.0-rc.1", Version(2, 0, 0)),
        ("v0.12", Version(0, 12, 0)),
        (" 1.7.0+unknown", Version(1, 7, 0)),
        ("unknown", None),
        ("", None),
        ("v", None),
    ],
)
def test_parse_version(text: str, expected: Version | None) -> None:
    assert versions.parse_version(text) == expected


@pytest.mark.parametrize(
    ("containerd", "nri"),
    [
        ("1.6.30", None),
        ("1.7.0", "v0.3.0"),
        ("1.7.6", "v0.3.0"),
        ("1.7.7", "v0.4.0"),
        ("1.7.13", "v0.4.0"),
        ("1.7.14", "v0.6.0"),
        ("1.7.15", "v0.6.0"),
        ("1.7.16", "v0.6.1"),
        ("1.7.25", "v0.6.1"),
        ("1.7.26", "v0.8.0"),
        ("1.7.34", "v0.8.0"),
        ("2.0.0", "v0.8.0"),
        ("2.1.9", "v0.8.0"),
        ("2.2.0", "v0.10.0"),
        ("2.2.1", "v0.11.0"),
        ("2.2.7", "v0.11.0"),
        ("2.3.0", "v0.12.0"),
        ("2.3.4", "v0.12.0"),
    ],
)
def test_containerd_table(containerd: str, nri: str | None) -> None:
    version = versions.parse_version(containerd)
    assert version is not None
    found = versions.containerd_nri_version(version)
    assert (None if found is None else str(found)) == nri


def test_runtime_level_sources_and_masks() -> None:
    reported = versions.runtime_level("containerd", "v2.3.0", "v0.12.2")
    assert reported.source is LevelSource.REPORTED and reported.nri_version == Version(0, 12, 2)
    assert reported.valid_events == api.ALL_EVENTS and reported.dedicated_event_rpcs
    odd = versions.runtime_level("containerd", "v9", "(devel)")  # the field exists: >= 0.12
    assert odd.nri_version == versions.NRI_0_12 and odd.source is LevelSource.REPORTED
    inferred = versions.runtime_level("containerd", "1.7.24~ds1")
    assert inferred.source is LevelSource.INFERRED and inferred.nri_version == Version(0, 6, 1)
    assert inferred.valid_events == api.LEGACY_EVENTS and not inferred.dedicated_event_rpcs
    assert versions.runtime_level("containerd", "v2.2.0").valid_events == api.ALL_EVENTS
    for name, version in [("cri-o", "1.33.0"), ("containerd", "garbage"), ("", "")]:
        unknown = versions.runtime_level(name, version)
        assert unknown.source is LevelSource.UNKNOWN and unknown.nri_version is None
        assert unknown.valid_events == api.LEGACY_EVENTS
    assert str(inferred) == "NRI v0.6.1 (inferred from the runtime version)"


@given(st.integers(0, 3), st.integers(0, 40), st.integers(0, 60))
def test_inferred_level_never_claims_new_events_for_containerd_below_2_2(
    major: int, minor: int, patch: int
) -> None:
    level = versions.runtime_level("containerd", f"v{major}.{minor}.{patch}")
    accepts_new = level.valid_events == api.ALL_EVENTS
    assert accepts_new == ((major, minor) >= (2, 2))
