"""Setting up the replay of a recording (``nrirp run --record``): the node's machine, its
policy and configuration, the state it started from; and what to say about a damaged file.
"""

from __future__ import annotations

import json
import os
import re
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
    """Advice for a recording that does not read, the YAML parser having stopped at ``line``
    (``None``: it did not say where). The damaged line is the first one up to ``line`` that
    is not what the writer writes (see :func:`_first_damaged_line`): the parser notices a
    line cut short only on a later one (past the end of the file, for the last line)."""
    found = _first_damaged_line(path, line)
    damaged, in_header = found if found is not None else (line, False)
    where = f"line {damaged}" if damaged else "some line"
    problem = (
        f"the recording is damaged at {where} (cut short or corrupted: the daemon killed while "
        f"writing, a full disk, an edit)"
    )
    if not damaged:
        return problem
    if in_header:
        return (
            f"{problem}; it is the part's header (its machine, configuration and state): no "
            "step of this part replays without it"
        )
    return f"{problem}; `head -n {damaged - 1} {path} > part.yaml` keeps the steps before it"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""Control characters the writer never writes (a tab aside; YAML refuses most of them)."""


def _first_damaged_line(path: str, limit: int | None) -> tuple[int, bool] | None:
    """The first line (up to ``limit``) of the recording at ``path`` that is not one the
    writer writes: a comment, ``description: "..."``, ``recording: {JSON}``, ``steps:``, a
    step ``- {JSON}``; and whether it is before ``steps:`` (the header). ``None``: none."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    in_header = True
    for number, raw in enumerate(lines, 1):
        if limit is not None and number > limit:
            break
        if not _line_is_whole(raw, in_header):
            return number, in_header
        if raw == b"steps:":
            in_header = False
    return None


def _line_is_whole(raw: bytes, in_header: bool) -> bool:
    """Whether ``raw`` is a line as the writer writes it, in the header or among the steps."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if _CONTROL.search(text):
        return False
    if text.startswith("#"):
        return True
    if in_header:
        if text == "steps:":
            return True
        if text.startswith("description: "):
            value = text.removeprefix("description: ")
            return len(value) >= 2 and value[0] == value[-1] == '"'
        prefix = "recording: "
    else:
        prefix = "- "
    if not text.startswith(prefix):
        return False
    try:
        return isinstance(json.loads(text.removeprefix(prefix)), dict)
    except ValueError:
        return False
