"""Config documents: YAML/JSON text to data, and a custom-resource document to its spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from nrirp.domain.config.errors import Issue, Path, quote

API_VERSION = "config.nri/v1alpha1"
CR_KEYS = ("apiVersion", "kind", "metadata", "spec", "status")
_CR_MARKERS = ("apiVersion", "kind", "spec")


class YAMLSyntaxError(ValueError):
    """Text that is not one well-formed YAML (or JSON) document."""


_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml


class _StrictLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """Safe loader that refuses duplicate mapping keys (YAML says they are an error)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in out
        except TypeError:  # unhashable key, e.g. a list: let the base loader report it
            duplicate = False
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {quote(key)}",
                key_node.start_mark,
            )
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def parse_text(text: str) -> Any:
    """Parse one YAML or JSON document; empty text (or only comments) gives ``None``."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = err.problem or err.context or "syntax error"
        raise YAMLSyntaxError(f"invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as err:
        raise YAMLSyntaxError(f"invalid YAML: {err}") from None


def is_custom_resource(data: Mapping[Any, Any]) -> bool:
    return any(marker in data for marker in _CR_MARKERS)


def unwrap_custom_resource(
    data: Mapping[Any, Any], kind: str | None, policy: str
) -> tuple[Any, Path, list[Issue]]:
    """The spec of a custom-resource document, the path prefix of the spec, and any issues
    with the document's envelope (``metadata`` and ``status`` are ignored)."""
    issues: list[Issue] = []
    if kind is None:
        issues.append(((), f"policy {policy!r} has no custom resource kind; give a bare spec"))
        return None, ("spec",), issues
    api_version = data.get("apiVersion")
    if api_version is None:
        issues.append((("apiVersion",), "required field missing"))
    elif api_version != API_VERSION:
        issues.append(
            (
                ("apiVersion",),
                f"invalid value {quote(api_version)}: expected {quote(API_VERSION)}",
            )
        )
    given_kind = data.get("kind")
    if given_kind is None:
        issues.append((("kind",), "required field missing"))
    elif given_kind != kind:
        issues.append(
            (
                ("kind",),
                f"invalid value {quote(given_kind)}: expected {quote(kind)}"
                f" for policy {quote(policy)}",
            )
        )
    for key in data:
        if key not in CR_KEYS:
            issues.append(((key if isinstance(key, str) else str(key),), "unknown field"))
    spec = data.get("spec")
    return ({} if spec is None else spec), ("spec",), issues
