"""Port: RDT resource control groups on the host (resctrl)."""

from __future__ import annotations

from typing import Protocol

from nrirp.domain.hostcontrol.resctrl import ResctrlInfo, ResctrlPlan


class ResctrlControl(Protocol):
    """Creates and maintains the resctrl groups of ``control.rdt``.

    - :meth:`info` reads what resctrl offers (``info/L2``, ``info/L3``, ``info/MB``, the root
      ``schemata``'s cache ids); it raises ``HostControlError`` when there is no usable
      resctrl (not mounted, read-only), with the reason.
    - :meth:`apply` makes the groups match ``plan``: a group the plan names is the daemon's,
      made when missing and adopted when it exists (left by an earlier daemon, stopped or
      killed: its tasks stay in it); each group's schemata lines are written (the root group
      is ``""``). Groups of the daemon's that the plan does not have are removed: at once
      when this run made or adopted them, once they hold no task when only an earlier daemon
      did (tried again at every apply). Groups that are not the daemon's are left alone. It
      applies what it can, then raises ``HostControlError`` naming each failure.
    - :meth:`restore` (shutdown) leaves the groups of the plan applied last that hold tasks
      (their containers keep their class across a restart), removes the daemon's other
      groups and gives the root group its schemata back; safe to call twice.
    - :meth:`clear` (RDT turned off) removes every group of the daemon's, tasks or not, and
      gives the root group its schemata back.

    The daemon's groups and the root group's original schemata are journalled (state
    directory) as soon as known, so the next daemon knows them also after a SIGKILL.
    Containers join a group through the runtime (NRI's ``rdt_class`` is the group's name).
    """

    def info(self) -> ResctrlInfo: ...

    def apply(self, plan: ResctrlPlan) -> None: ...

    def restore(self) -> None: ...

    def clear(self) -> None: ...
