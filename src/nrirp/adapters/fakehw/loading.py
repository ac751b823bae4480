"""Reading machine specs from YAML: strict types, unknown keys rejected, errors with paths."""

from __future__ import annotations

import enum
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory
from cattrs.gen import make_dict_structure_fn

from nrirp.adapters.documents import MACHINE_SPEC, UnreadableDocument, load_document
from nrirp.adapters.fakehw.errors import MachineSpecError
from nrirp.adapters.fakehw.layout import resolve
from nrirp.adapters.fakehw.spec import ByteSize, MachineSpec, NodeIds
from nrirp.domain.config.converter import STRICT_HOOKS, structure_enum
from nrirp.domain.config.errors import MAX_SHOWN_PROBLEMS, InvalidValue
from nrirp.domain.config.quantity import parse_byte_size
from nrirp.domain.cpuset import CPUSet, CPUSetError, structure_cpuset, unstructure_cpuset
from nrirp.domain.ports.documents import clip


class _BadValue(ValueError):
    """A value rejected by one of our hooks; its message already quotes the value."""


def _described(err: InvalidValue) -> _BadValue:
    """A strict hook's refusal in this module's words: ``<expected>, got <value>``."""
    return _BadValue(f"{err.expected}, got {err.value!r}")


def parse_size(value: Any, _type: Any = ByteSize) -> ByteSize:
    """Bytes from an int or a string with a binary suffix (``48K``, ``16Gi``, ``1TiB``): the
    quantity parser's :func:`~nrirp.domain.config.quantity.parse_byte_size`."""
    try:
        return ByteSize(parse_byte_size(value))
    except InvalidValue as err:
        raise _described(err) from None


def format_size(size: int) -> str:
    """The shortest exact binary-suffixed spelling of ``size`` bytes."""
    for suffix, shift in (("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if size and size % (1 << shift) == 0:
            return f"{size >> shift}{suffix}"
    return str(size)


def _node_ids(value: Any, _type: Any = NodeIds) -> NodeIds:
    """A node id or a non-empty list of them."""
    items = value if isinstance(value, list | tuple) else [value]
    if not items or not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise _BadValue(f"expected a node id or a list of node ids, got {value!r}")
    return NodeIds(tuple(items))


def _unstructure_node_ids(value: tuple[int, ...]) -> int | list[int]:
    return value[0] if len(value) == 1 else list(value)


def _cpuset(value: Any, _type: Any) -> CPUSet:
    try:
        return structure_cpuset(value)
    except CPUSetError as err:
        raise _BadValue(str(err)) from None


def _is_tuple_of(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _make_converter() -> cattrs.Converter:
    """The config converter's strict hooks (the same rules for primitives and enumerations),
    with the spec's own key names (its attribute names) and cattrs' error paths."""
    conv = cattrs.Converter(forbid_extra_keys=True)
    for primitive, hook in STRICT_HOOKS.items():
        conv.register_structure_hook(primitive, hook)
    conv.register_structure_hook(ByteSize, parse_size)
    conv.register_structure_hook(CPUSet, _cpuset)
    conv.register_structure_hook(NodeIds, _node_ids)
    conv.register_unstructure_hook(NodeIds, _unstructure_node_ids)
    conv.register_unstructure_hook(CPUSet, unstructure_cpuset)
    conv.register_structure_hook_func(
        lambda t: isinstance(t, type) and issubclass(t, enum.Enum), structure_enum
    )

    def attrs_hook_factory(cls: type) -> Any:
        inner: Any = make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True)

        def hook(value: Any, type_: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _BadValue(f"expected a mapping, got {value!r}")
            return inner(value, type_)

        return hook

    def tuple_hook_factory(type_: Any) -> Any:
        inner: Any = homogenous_tuple_structure_factory(type_, conv)

        def hook(value: Any, t: Any) -> Any:
            if not isinstance(value, list | tuple):  # a string or mapping is no list of items
                raise _BadValue(f"expected a list, got {value!r}")
            return inner(value, t)

        return hook

    conv.register_structure_hook_factory(attrs.has, attrs_hook_factory)
    conv.register_structure_hook_factory(_is_tuple_of, tuple_hook_factory)
    return conv


converter = _make_converter()


def _format(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, InvalidValue):
        return str(_described(exc))
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
