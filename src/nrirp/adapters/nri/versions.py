"""Which NRI level a runtime speaks, and which events it will accept.

Runtimes with NRI >= 0.12 send their NRI version in ``ConfigureRequest.NRI_version``. Older ones
do not, so the level is inferred from the runtime name and version (as the Go stub's
``pkg/api/version.go`` does) with the table of NRI versions each containerd release vendors.
What matters most is the event mask: events above 11 (UpdatePodSandbox, PostUpdatePodSandbox,
ValidateContainerAdjustment) make runtimes with NRI <= 0.9 refuse the plugin at Configure, so
when the level is unknown only events 1..11 are assumed valid.

CRI-O is recognised but has no version table here: its vendored NRI versions could not be
established from sources available to this project, so CRI-O without ``NRI_version`` (that is,
CRI-O built with NRI < 0.12) gets the conservative mask.
"""

from __future__ import annotations

import enum
import re

import attrs

from nrirp.adapters.nri.api import ALL_EVENTS, LEGACY_EVENTS, EventMask


@attrs.frozen(order=True)
class Version:
    """A ``major.minor.patch`` version (pre-release and build suffixes are ignored)."""

    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"


_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> Version | None:
    """Parse the leading ``[v]major.minor[.patch]`` of ``text`` (``"v2.2.1"``,
    ``"1.7.24~ds1"``, ``"2.0.0-rc.1"``); None if it does not start like a version."""
    match = _VERSION.match(text)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return Version(int(major), int(minor), int(patch or 0))


NRI_0_10 = Version(0, 10, 0)
NRI_0_11 = Version(0, 11, 0)
NRI_0_12 = Version(0, 12, 0)

PLUGIN_NRI_VERSION = Version(0, 12, 2)
"""The NRI API level this stub implements (sent in RegisterPlugin, ignored by old runtimes)."""

# containerd release (first version of a range) -> the NRI version it vendors (go.mod).
# Ranges are inclusive up to the next entry. Before 1.7 there is no ttRPC NRI.
_CONTAINERD: tuple[tuple[Version, Version], ...] = (
    (Version(1, 7, 0), Version(0, 3, 0)),
    (Version(1, 7, 7), Version(0, 4, 0)),
    (Version(1, 7, 14), Version(0, 6, 0)),
    (Version(1, 7, 16), Version(0, 6, 1)),
    (Version(1, 7, 26), Version(0, 8, 0)),
    (Version(2, 0, 0), Version(0, 8, 0)),
    (Version(2, 2, 0), Version(0, 10, 0)),
    (Version(2, 2, 1), Version(0, 11, 0)),
    (Version(2, 3, 0), Version(0, 12, 0)),
)


def containerd_nri_version(version: Version) -> Version | None:
    """The NRI version a containerd release embeds; None before 1.7 (no ttRPC NRI)."""
    found = None
    for first, nri in _CONTAINERD:
        if version >= first:
            found = nri
    return found


class LevelSource(enum.Enum):
    """Where a runtime's NRI level came from."""

    REPORTED = "reported by the runtime"
    INFERRED = "inferred from the runtime version"
    UNKNOWN = "unknown"


@attrs.frozen
class RuntimeLevel:
    """What we know about the runtime's NRI level."""

    nri_version: Version | None
    source: LevelSource

    @property
    def valid_events(self) -> EventMask:
        """Events the runtime accepts in Configure: 1..14 for NRI >= 0.10, else 1..11."""
        if self.nri_version is not None and self.nri_version >= NRI_0_10:
            return ALL_EVENTS
        return LEGACY_EVENTS

    @property
    def carries_scheduling(self) -> bool:
        """True if the runtime applies the scheduler and I/O priority of a creation
        adjustment: NRI >= 0.11 (containerd >= 2.2.1; 2.2.0's NRI 0.10 has the I/O priority
        field but containerd applies neither before 2.2.1)."""
        return self.nri_version is not None and self.nri_version >= NRI_0_11

    @property
    def dedicated_event_rpcs(self) -> bool:
        """True if the runtime calls the per-event RPCs (NRI >= 0.12) rather than StateChange."""
        return self.nri_version is not None and self.nri_version >= NRI_0_12

    def __str__(self) -> str:
        version = "unknown" if self.nri_version is None else str(self.nri_version)
        return f"NRI {version} ({self.source.value})"


def runtime_level(runtime_name: str, runtime_version: str, nri_version: str = "") -> RuntimeLevel:
    """The runtime's NRI level from Configure's ``NRI_version``, else from its name/version.

    A non-empty ``NRI_version`` that does not parse still proves NRI >= 0.12 (the field was
    added then). Unknown runtimes and versions give an unknown level (legacy events only).
    """
    if nri_version:
        return RuntimeLevel(parse_version(nri_version) or NRI_0_12, LevelSource.REPORTED)
    version = parse_version(runtime_version)
    if version is not None and runtime_name.strip().lower() == "containerd":
        inferred = containerd_nri_version(version)
        if inferred is not None:
            return RuntimeLevel(inferred, LevelSource.INFERRED)
    return RuntimeLevel(None, LevelSource.UNKNOWN)
