"""Which NRI release the simulated runtime behaves like, and what that changes.

Behaviour differences between runtime-side NRI releases (containerd/nri ``pkg/adaptation``) that a
plugin can observe are expressed as predicates of :class:`NriVersion`, so the rest of the runtime
asks ``version.splits_sync`` instead of comparing numbers.
"""

from __future__ import annotations

import re

import attrs

from nrirp.simruntime.errors import InvalidRequest

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")

LEGACY_VALID_EVENTS = 0x7FF
"""Events 1..11: ``ValidEvents`` of runtimes with NRI <= 0.9."""
VALID_EVENTS = 0x3FFF
"""Events 1..14: ``ValidEvents`` of runtimes with NRI >= 0.10."""

# The containerd release that embeds each NRI release (the newest one, except v0.6.1, which is
# what the containerd 1.7.24 on this kind of machine embeds). Used as the default
# ``runtime_version`` so plugins that guess the NRI level from it guess right.
_CONTAINERD_FOR_NRI: tuple[tuple[tuple[int, int, int], str], ...] = (
    ((0, 3, 0), "v1.7.6"),
    ((0, 4, 0), "v1.7.13"),
    ((0, 6, 0), "v1.7.15"),
    ((0, 6, 1), "v1.7.24"),
    ((0, 8, 0), "v2.1.0"),
    ((0, 10, 0), "v2.2.0"),
    ((0, 11, 0), "v2.2.1"),
    ((0, 12, 0), "v2.3.0"),
)


@attrs.frozen(order=True)
class NriVersion:
    """An NRI release, e.g. ``NriVersion.parse("v0.6.1")``; ordered by number."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> NriVersion:
        """Parse ``v0.12.2`` / ``0.6.1`` / ``v0.10``; raise :class:`InvalidRequest` otherwise."""
        match = _VERSION.fullmatch(text.strip())
        if match is None:
            raise InvalidRequest(f"invalid NRI version {text!r}: expected e.g. 'v0.6.1'")
        major, minor, patch = match.groups()
        version = cls(int(major), int(minor), int(patch or 0))
        if version < OLDEST:
            raise InvalidRequest(f"NRI version {text!r} is older than {OLDEST}, not emulated")
        return version

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"

    def at_least(self, minor: int, patch: int = 0) -> bool:
        """True when this is v0.``minor``.``patch`` or newer."""
        return (self.major, self.minor, self.patch) >= (0, minor, patch)

    # ------------------------------------------------------------------ behaviour

    @property
    def valid_events(self) -> int:
        """The runtime's ``ValidEvents`` mask; Configure replies with other bits are refused."""
        return VALID_EVENTS if self.at_least(10) else LEGACY_VALID_EVENTS

    @property
    def splits_sync(self) -> bool:
        """Synchronize is split into ``more`` chunks when too large (v0.7+)."""
        return self.at_least(7)

    @property
    def sends_timeouts(self) -> bool:
        """Configure carries the registration and request timeouts (v0.7+)."""
        return self.at_least(7)

    @property
    def sends_nri_version(self) -> bool:
        """Configure carries the runtime's NRI version (v0.12+)."""
        return self.at_least(12)

    @property
    def dedicated_event_rpcs(self) -> bool:
        """Non-adjusting events use their own RPCs, falling back to StateChange (v0.12+)."""
        return self.at_least(12)

    @property
    def pod_updates(self) -> bool:
        """UpdatePodSandbox / PostUpdatePodSandbox exist (v0.10+)."""
        return self.at_least(10)

    @property
    def validates_adjustments(self) -> bool:
        """ValidateContainerAdjustment is called after merging (v0.10+)."""
        return self.at_least(10)

    @property
    def checks_plugin_name_syntax(self) -> bool:
        """External plugin names must match ``[A-Za-z0-9_.+-]+`` (v0.12+)."""
        return self.at_least(12)

    @property
    def removal_claims_ownership(self) -> bool:
        """A ``-key`` removal makes the remover the owner of the key (v0.10+, with the
        ownership tracking that validation exposes); before, it only cleared the owner."""
        return self.at_least(10)

    @property
    def close_on_sync_failure(self) -> bool:
        """A failed Synchronize closes the plugin's connection (v0.7+). Older releases only
        leave the plugin out of the event loop and its connection open."""
        return self.at_least(7)

    @property
    def default_runtime_version(self) -> str:
        """The containerd version that embeds this NRI release (or the closest older one)."""
        key = (self.major, self.minor, self.patch)
        chosen = _CONTAINERD_FOR_NRI[0][1]
        for nri, containerd in _CONTAINERD_FOR_NRI:
            if nri <= key:
                chosen = containerd
        return chosen


OLDEST = NriVersion(0, 3, 0)
"""The oldest release emulated: the first one with the ttRPC protocol (containerd 1.7.0)."""
CONTAINERD_1_7_24 = NriVersion(0, 6, 1)
"""What containerd 1.7.16-1.7.25 embed (the real runtime on this kind of machine)."""
HEAD = NriVersion(0, 12, 2)
"""The newest release the protocol notes describe (containerd main)."""
