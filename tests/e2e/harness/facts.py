"""What the e2e tests expect of each containerd release they run on, where releases differ.

Neither containerd 1.7 nor 2.0/2.1 sends its NRI version; our plugins infer it from the
runtime's version and say so in their registration line. A release not listed here fails the
tests that ask (its facts must be looked at and added, not guessed).
"""

from __future__ import annotations

import attrs

from .containerd import Containerd
from .packages import HarnessSetupError


@attrs.frozen
class RuntimeFacts:
    """Facts of one containerd release series."""

    nri: str
    """The NRI release its runtime side embeds, as a plugin registered with it names it."""
    synchronizes_prelaunched: bool
    """Pre-launched plugins get a Synchronize (NRI 0.6.1 synchronizes only plugins that
    connect to its socket)."""
    prelaunched_timeout_is_fatal: bool
    """containerd exits when a pre-launched plugin misses the registration timeout (2.x logs it
    and goes on without the plugin)."""


_FACTS = {
    "1.7": RuntimeFacts(
        nri="0.6.1", synchronizes_prelaunched=False, prelaunched_timeout_is_fatal=True
    ),
    "2.0": RuntimeFacts(
        nri="0.8.0", synchronizes_prelaunched=True, prelaunched_timeout_is_fatal=False
    ),
    "2.1": RuntimeFacts(
        nri="0.8.0", synchronizes_prelaunched=True, prelaunched_timeout_is_fatal=False
    ),
}


def runtime_facts(runtime: Containerd) -> RuntimeFacts:
    """The facts of ``runtime``'s containerd release series."""
    series = ".".join(runtime.binaries.containerd_version.split(".")[:2])
    facts = _FACTS.get(series)
    if facts is None:
        raise HarnessSetupError(
            f"the e2e tests know no facts of containerd {series} (found "
            f"{runtime.binaries.containerd_version}); add them to tests/e2e/harness/facts.py"
        )
    return facts
