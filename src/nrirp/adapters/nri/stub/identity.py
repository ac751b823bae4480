"""Plugin identity: a name and a two-digit index, from arguments, the environment or argv[0]."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

import attrs

from nrirp.adapters.nri.api import PLUGIN_IDX_ENV, PLUGIN_NAME_ENV
from nrirp.adapters.nri.stub.errors import IdentityError

_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
_INDEX = re.compile(r"[0-9]{2}")
_PROGRAM = re.compile(r"([0-9]{2})-(.+)")


@attrs.frozen
class PluginIdentity:
    """How the plugin registers: ``name`` and ``index`` (two digits; plugins run in index order)."""

    name: str
    index: str

    def __attrs_post_init__(self) -> None:
        check_index(self.index, "index")
        check_name(self.name, "name")

    @property
    def full_name(self) -> str:
        """``NN-name``, as the runtime names the plugin."""
        return f"{self.index}-{self.name}"


def check_index(index: str, source: str) -> None:
    """Raise IdentityError unless ``index`` is exactly two ASCII digits."""
    if not _INDEX.fullmatch(index):
        raise IdentityError(f"plugin index {index!r} from {source} must be exactly two digits")


def check_name(name: str, source: str) -> None:
    """Raise IdentityError unless ``name`` matches ``[A-Za-z0-9_.+-]+`` (what NRI accepts)."""
    if not _NAME.fullmatch(name):
        raise IdentityError(
            f"plugin name {name!r} from {source} must be non-empty and match [A-Za-z0-9_.+-]+"
        )


def parse_program_name(argv0: str) -> tuple[str, str] | None:
    """``(index, name)`` from a program path whose base name is ``NN-name``, else None."""
    match = _PROGRAM.fullmatch(os.path.basename(argv0))
    return None if match is None else (match.group(1), match.group(2))


def resolve_identity(
    name: str | None = None,
    index: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    argv0: str = "",
    default_name: str | None = None,
    default_index: str | None = None,
) -> PluginIdentity:
    """Resolve name and index, each from the first source that has it.

    Order: the arguments, then ``NRI_PLUGIN_NAME``/``NRI_PLUGIN_IDX``, then argv[0] named
    ``NN-name`` (how the runtime starts pre-launched plugins), then the defaults. Raises
    IdentityError naming the source of an invalid value, or saying what is missing.
    """
    env = os.environ if environ is None else environ
    program = parse_program_name(argv0) if argv0 else None
    candidates_name = (
        (name, "the arguments"),
        (env.get(PLUGIN_NAME_ENV) or None, PLUGIN_NAME_ENV),
        (None if program is None else program[1], f"argv[0] {argv0!r}"),
        (default_name, "the default"),
    )
    candidates_index = (
        (index, "the arguments"),
        (env.get(PLUGIN_IDX_ENV) or None, PLUGIN_IDX_ENV),
        (None if program is None else program[0], f"argv[0] {argv0!r}"),
        (default_index, "the default"),
    )
    resolved_name = _first(candidates_name, check_name, "name")
    resolved_index = _first(candidates_index, check_index, "index")
    return PluginIdentity(resolved_name, resolved_index)


def _first(
    candidates: tuple[tuple[str | None, str], ...], check: Callable[[str, str], None], what: str
) -> str:
    for value, source in candidates:
        if value is not None:
            check(value, source)
            return value
    variable = PLUGIN_NAME_ENV if what == "name" else PLUGIN_IDX_ENV
    raise IdentityError(
        f"no plugin {what}: give one, set {variable}, or run the plugin as a program named NN-name"
    )
