"""Setting up the replay of a recording (``nrirp run --record``): the node's machine, its
policy and configuration, the state it started from; and what to say about a damaged file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from dependency_injector import providers

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.fakehw import FakeHardwareDiscovery, MachineSpecError, spec_from_data
from nrirp.adapters.memory import InMemoryStateStore
from nrirp.adapters.recording.format import RecordingHeader
from nrirp.app.simulator.composition import SimulatorContainer
from nrirp.domain.topology import MemoryType

MARK = "# nrirp recording"
"""The first line of every recording file."""
_END = "# end of recording"
_CONTINUED = "# continued in"
_STOPPED = "# recording stopped"


def recorded_machine(
    recording: RecordingHeader,
    source: str,
    memory_types: Mapping[int, MemoryType] | None = None,
) -> FakeHardwareDiscovery:
    """The recorded node's machine, with its memory types (``memory_types`` override them);
    raises :class:`MachineSpecError`."""
    spec = spec_from_data(recording.machine, f"{source}: recording.machine")
    recorded: dict[int, MemoryType] = {}
    for item in recording.memory_types:
        node, _, kind = item.partition("=")
        try:
            recorded[int(node)] = MemoryType(kind)
        except ValueError:
            raise MachineSpecError(
                f"{source}: recording.memoryTypes: invalid value {item!r}: expected "
                f"NODE=TYPE, TYPE one of {', '.join(t.value for t in MemoryType)}"
            ) from None
    return FakeHardwareDiscovery(spec, {**recorded, **(memory_types or {})})


def is_recording(path: str) -> bool:
    """Whether the file at ``path`` is a recording (by its first line)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MARK)) == MARK.encode()
    except OSError:
        return False


def use_recording_state(
    container: SimulatorContainer, recording: RecordingHeader, *, keep_config: bool
) -> None:
    """Have ``container`` start as the recorded daemon did: from the recording's saved state
    (if any) and, when ``keep_config``, with its configuration (if it is the same policy's).
    Raises ``ConfigError`` for a recorded configuration that no longer loads."""
    if recording.state is not None:
        state = dict(recording.state)
        container.adapters.state_store.override(providers.Singleton(InMemoryStateStore, state))
    core = container.core
    same_policy = recording.policy == container.config.policy()
    if keep_config and recording.config is not None and same_policy:
        config = load_policy_config(recording.policy, recording.config, core.policy_registry())
        core.policy_config.override(providers.Object(config))


def ending(path: str) -> str | None:
    """What the last line of the recording at ``path`` says about its end, when it is not a
    clean one (``None``: the daemon stopped, or the part was rotated)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))
            tail = handle.read().decode("utf-8", "replace").rstrip("\n").rsplit("\n", 1)[-1]
    except OSError:
        return None
    if tail.startswith((_END, _CONTINUED)):
        return None
    if tail.startswith(_STOPPED):
        return tail.removeprefix("# ")
    return (
        "the recording has no end mark: the daemon was killed or is still recording; "
        "its complete steps are replayed"
    )


def damage_hint(path: str, line: int | None) -> str:
    """Advice for a recording that does not read at ``line``."""
    where = f"line {line}" if line else "some line"
    keep = f"`head -n {line - 1} {path} > part.yaml` keeps the steps before it" if line else ""
    return (
        f"the recording is damaged at {where} (cut short or corrupted: the daemon killed while "
        f"writing, a full disk, an edit)" + (f"; {keep}" if keep else "")
    )
