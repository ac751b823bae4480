"""Port: interrupt affinity on the host (``/proc/irq``)."""

from __future__ import annotations

from typing import Protocol

from nrirp.domain.hostcontrol.interrupts import Affinities, Interrupt


class InterruptControl(Protocol):
    """Steers interrupts to CPUs.

    - :meth:`interrupts` lists the interrupts whose affinity can be changed, each with the
      affinity it had before this adapter changed it (so rules about "its own affinity" keep
      meaning the host's). It raises ``HostControlError`` when interrupts cannot be steered at
      all (no ``/proc/irq``, read-only), with the reason.
    - :meth:`apply` gives the listed interrupts their affinity and every other interrupt it
      changed before its original one back; likewise the default affinity for new
      interrupts. It applies what it can, then raises ``HostControlError`` naming each
      failure (an interrupt the kernel refuses is not tried again).
    - :meth:`restore` puts back everything it changed (shutdown); safe to call twice.
    """

    def interrupts(self) -> tuple[Interrupt, ...]: ...

    def apply(self, affinities: Affinities) -> None: ...

    def restore(self) -> None: ...
