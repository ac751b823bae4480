"""The daemon (``nrirp run``): its composition, next to the command in ``app/commands/run.py``."""

from nrirp.app.daemon.composition import DaemonAdapters, DaemonContainer

__all__ = ["DaemonAdapters", "DaemonContainer"]
