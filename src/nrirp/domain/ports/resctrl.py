"""Port: RDT resource control groups on the host (resctrl)."""

from __future__ import annotations

from typing import Protocol

from nrirp.domain.hostcontrol.resctrl import ResctrlInfo, ResctrlPlan


class ResctrlControl(Protocol):
    """Creates and maintains the resctrl groups of ``control.rdt``.

    - :meth:`info` reads what resctrl offers (``info/L2``, ``info/L3``, ``info/MB``, the root
      ``schemata``'s cache ids); it raises ``HostControlError`` when there is no usable
      resctrl (not mounted, read-only), with the reason.
    - :meth:`apply` makes the groups match ``plan``: creates missing groups, writes each
      group's schemata lines (the root group is ``""``), and removes the groups it created
      earlier that the plan no longer has (groups it did not create are left alone). It
      applies what it can, then raises ``HostControlError`` naming each failure.
    - :meth:`restore` removes the groups it created and gives the root group its schemata
      back (shutdown); safe to call twice.

    Containers join a group through the runtime (NRI's ``rdt_class`` is the group's name).
    """

    def info(self) -> ResctrlInfo: ...

    def apply(self, plan: ResctrlPlan) -> None: ...

    def restore(self) -> None: ...
