"""``nrirp run --record FILE``: the daemon's recorder (``adapters/recording``), set up only when
asked (nothing of it is imported otherwise, so a daemon without it starts as fast as before).

The recorder is the composition's ``inbound_observer``: the resource manager tells it of every
call it handles, whichever driver made it (the NRI plugin, the engine API, NRI v0.1 requests,
the reload thread, the node agent), in the pipeline's own order.
"""

from __future__ import annotations

import argparse
import atexit
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nrirp.app.daemon import DaemonContainer
    from nrirp.domain.topology import Machine


def start_recording(
    container: DaemonContainer, args: argparse.Namespace, machine: Machine
) -> str | None:
    """Make the recorder when ``--record`` is given, before the resource manager is built
    (it observes it from its start); returns why it cannot record (``None``: recording, or
    not asked to). Its file is made by :func:`open_recording`, once the state directory is
    locked (another daemon's recording is never touched)."""
    if not getattr(args, "record", None):
        return None
    from dependency_injector import providers

    from nrirp.adapters.recording import Recorder, RecordingError, RecordingLimits
    from nrirp.app.commands.common.recording import record_limits

    core = container.core.container
    try:
        recorder = Recorder(
            args.record,
            policy=args.policy,
            machine=machine,
            dump_config=core.config_codec().dump,
            limits=RecordingLimits(*record_limits(args)),
            node=getattr(args, "node_name", None) or os.uname().nodename,
        )
    except RecordingError as exc:
        return str(exc)
    container.adapters.container.inbound_observer.override(providers.Object(recorder))
    return None


def open_recording(container: DaemonContainer) -> str | None:
    """Create the recording's file and start writing (when recording); returns why it
    cannot."""
    recorder = container.adapters.container.inbound_observer()
    if recorder is None:  # not recording: nothing of the recorder is imported
        return None
    from nrirp.adapters.recording import Recorder, RecordingError

    if not isinstance(recorder, Recorder):
        return None
    try:
        recorder.open()
    except RecordingError as exc:
        return str(exc)
    atexit.register(recorder.close)  # whatever way the daemon ends; closing twice is harmless
    return None


def stop_recording(container: DaemonContainer) -> None:
    """Write what is left and end the recording (when there is one)."""
    observer: Any = container.adapters.container.inbound_observer()
    close = getattr(observer, "close", None)
    if callable(close):
        close()


def attach_recording(container: DaemonContainer, *, nri: bool) -> None:
    """Once the daemon serves (``nri``: over NRI): the recorder's thread steps aside while NRI
    handlers run."""
    recorder = container.adapters.container.inbound_observer()
    if recorder is None or not nri:  # not recording: nothing of the recorder is imported
        return
    from nrirp.adapters.nri.stub.scope import HANDLERS
    from nrirp.adapters.recording import Recorder

    if isinstance(recorder, Recorder):
        recorder.attach(HANDLERS)
