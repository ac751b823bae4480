"""Port: CPU frequency, idle and uncore settings (CPU classes) on the host."""

from __future__ import annotations

from typing import Protocol

from nrirp.domain.hostcontrol.power import PowerCaps, PowerTarget


class CPUPowerControl(Protocol):
    """Applies CPU classes' settings: cpufreq limits, governor and EPP per CPU, C-states per
    CPU (cpuidle), uncore limits per die.

    - :meth:`capabilities` says what the host has: every CPU's range, governors, C-states and
      the knobs that can be written (a missing or read-only file leaves its knob out, and
      ``unavailable`` says why, naming the file). It reads the host once; it does not fail.
    - :meth:`apply` makes the host match ``target``: every setting the target gives is
      written (only when it differs from what was last written), every setting the adapter
      changed before and the target no longer gives is put back to the value it found there
      first. It applies what it can and then raises ``HostControlError`` naming each file
      that failed.
    - :meth:`restore` puts back every value it changed (shutdown); safe to call twice.

    Calls come with the pipeline lock held, after an operation committed, and only when the
    target changed; they should take milliseconds.
    """

    def capabilities(self) -> PowerCaps: ...

    def apply(self, target: PowerTarget) -> None: ...

    def restore(self) -> None: ...
