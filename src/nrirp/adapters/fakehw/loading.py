"""Reading machine specs from YAML: strict types, unknown keys rejected, errors with paths."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import cattrs
import yaml
from cattrs.gen import make_dict_structure_fn

from nrirp.adapters.fakehw.errors import MachineSpecError
from nrirp.adapters.fakehw.layout import resolve
from nrirp.adapters.fakehw.spec import ByteSize, MachineSpec
from nrirp.domain.cpuset import CPUSet, CPUSetError, structure_cpuset, unstructure_cpuset


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


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML loader that rejects duplicate mapping keys instead of keeping the last."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return dict(loader.construct_mapping(node))


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def spec_from_data(data: Any, source: str = "<spec>") -> MachineSpec:
    """Structure already-parsed YAML/JSON data into a validated spec."""
    try:
        spec = converter.structure(data, MachineSpec)
    except (cattrs.BaseValidationError, _BadValue) as err:
        problems = cattrs.transform_error(err, path="$", format_exception=_format)
        message = f"{source}: invalid machine spec:\n  " + "\n  ".join(problems)
        raise MachineSpecError(message) from None
    resolve(spec, source)  # the layout rules do the remaining validation
    return spec


def spec_from_yaml(text: str, source: str = "<spec>") -> MachineSpec:
    """Parse and validate a YAML machine spec; ``source`` names it in errors."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a safe loader subclass
    except yaml.YAMLError as err:
        raise MachineSpecError(f"{source}: not valid YAML: {err}") from None
    return spec_from_data(data, source)


def spec_from_file(path: str | Path) -> MachineSpec:
    """Load a machine spec file."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise MachineSpecError(f"{path}: cannot read: {err.strerror}") from None
    return spec_from_yaml(text, str(path))


def spec_to_data(spec: MachineSpec) -> dict[str, Any]:
    """The spec as plain data (defaults included), loadable again by :func:`spec_from_data`."""
    data: dict[str, Any] = converter.unstructure(spec)
    return data
