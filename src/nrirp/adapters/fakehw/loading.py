"""Reading machine specs from YAML: strict types, unknown keys rejected, errors with paths."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn

from nrirp.adapters.documents import MACHINE_SPEC, UnreadableDocument, load_document
from nrirp.adapters.fakehw.errors import MachineSpecError
from nrirp.adapters.fakehw.layout import resolve
from nrirp.adapters.fakehw.spec import ByteSize, MachineSpec
from nrirp.domain.config.errors import MAX_SHOWN_PROBLEMS
from nrirp.domain.cpuset import CPUSet, CPUSetError, structure_cpuset, unstructure_cpuset
from nrirp.domain.ports.documents import clip


class _BadValue(ValueError):
    """A value rejected by one of our hooks; its message already quotes the value."""


_SIZE = re.compile(r"\s*(\d+)\s*(?:([KMGT])(?:i?B|i)?)?\s*", re.ASCII)
_SIZE_SHIFT = {None: 0, "K": 10, "M": 20, "G": 30, "T": 40}


def parse_size(value: Any, _type: Any = ByteSize) -> ByteSize:
    """Bytes from an int or a string with a binary suffix (``48K``, ``16Gi``, ``1TiB``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise _BadValue(f"size must not be negative, got {value!r}")
        return ByteSize(value)
    if isinstance(value, str) and (m := _SIZE.fullmatch(value)):
        return ByteSize(int(m.group(1)) << _SIZE_SHIFT[m.group(2)])
    raise _BadValue(f"expected a size such as 4096, '48K' or '16Gi', got {value!r}")


def format_size(size: int) -> str:
    """The shortest exact binary-suffixed spelling of ``size`` bytes."""
    for suffix, shift in (("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if size and size % (1 << shift) == 0:
            return f"{size >> shift}{suffix}"
    return str(size)


def _strict_int(value: Any, _type: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadValue(f"expected an integer, got {value!r}")
    return value


def _strict_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise _BadValue(f"expected a string, got {value!r}")
    return value


def _enum(value: Any, type_: type[enum.Enum]) -> enum.Enum:
    for member in type_:
        if member.value == value:
            return member
    choices = ", ".join(repr(m.value) for m in type_)
    raise _BadValue(f"expected one of {choices}, got {value!r}")


def _cpuset(value: Any, _type: Any) -> CPUSet:
    try:
        return structure_cpuset(value)
    except CPUSetError as err:
        raise _BadValue(str(err)) from None


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(ByteSize, parse_size)
    conv.register_structure_hook(CPUSet, _cpuset)
    conv.register_unstructure_hook(CPUSet, unstructure_cpuset)
    conv.register_structure_hook_func(
        lambda t: isinstance(t, type) and issubclass(t, enum.Enum), _enum
    )

    def attrs_hook_factory(cls: type) -> Any:
        inner: Any = make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True)

        def hook(value: Any, type_: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _BadValue(f"expected a mapping, got {value!r}")
            return inner(value, type_)

        return hook

    conv.register_structure_hook_factory(attrs.has, attrs_hook_factory)
    return conv


converter = _make_converter()


def _format(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, _BadValue):
        return str(exc)
    return cattrs.v.format_exception(exc, type_)


def spec_from_data(data: Any, source: str = "<spec>") -> MachineSpec:
    """Structure already-parsed YAML/JSON data into a validated spec."""
    try:
        spec = converter.structure(data, MachineSpec)
    except (cattrs.BaseValidationError, _BadValue) as err:
        problems = cattrs.transform_error(err, path="$", format_exception=_format)
        shown = [clip(p) for p in problems[:MAX_SHOWN_PROBLEMS]]
        if len(problems) > MAX_SHOWN_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_SHOWN_PROBLEMS} more")
        message = f"{source}: invalid machine spec:\n  " + "\n  ".join(shown)
        raise MachineSpecError(message) from None
    except Exception as exc:  # data no YAML document gives (or a bug): still a spec error
        raise MachineSpecError(
            f"{source}: invalid machine spec: {type(exc).__name__}: {clip(str(exc))}"
        ) from None
    try:
        resolve(spec, source)  # the layout rules do the remaining validation
    except MachineSpecError:
        raise
    except Exception as exc:  # a bug, or a spec too big to lay out: still a spec error
        raise MachineSpecError(
            f"{source}: invalid machine spec: {type(exc).__name__}: {clip(str(exc))}"
        ) from None
    return spec


def spec_from_yaml(text: str | bytes, source: str = "<spec>") -> MachineSpec:
    """Parse and validate a YAML machine spec (text, or UTF-8 bytes; within the machine-spec
    budget); ``source`` names it in errors."""
    try:
        data = load_document(text, MACHINE_SPEC)
    except UnreadableDocument as err:
        reason = err.describe("not valid YAML")
        raise MachineSpecError(f"{source}: {reason}") from None
    return spec_from_data(data, source)


def spec_from_file(path: str | Path) -> MachineSpec:
    """Load a machine spec file."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MACHINE_SPEC.max_bytes + 1)  # more is refused unread
    except OSError as err:
        raise MachineSpecError(f"{path}: cannot read: {err.strerror}") from None
    return spec_from_yaml(text, str(path))


def spec_to_data(spec: MachineSpec) -> dict[str, Any]:
    """The spec as plain data (defaults included), loadable again by :func:`spec_from_data`."""
    data: dict[str, Any] = converter.unstructure(spec)
    return data
