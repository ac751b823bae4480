"""A small validator for the structural OpenAPI v3 schemas of CRDs, as kube-apiserver applies
them with strict field validation (``kubectl apply`` with ``--validate=strict``, the default):
types, ``properties``/``required``/``additionalProperties``, ``items``, ``enum``, ``pattern``,
``nullable``, ``anyOf``, ``x-kubernetes-int-or-string``, ``x-kubernetes-preserve-unknown-fields``,
and unknown fields reported as errors (a lax server would prune them instead)."""

from __future__ import annotations

import re
from typing import Any

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def validate(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Every violation as ``path: reason`` (empty: valid)."""
    where = path or "<root>"
    if value is None:
        return [] if schema.get("nullable") else [f"{where}: must not be null"]
    alternatives = schema.get("anyOf")
    if alternatives and all(validate(alt, value, path) for alt in alternatives):
        return [f"{where}: {value!r} matches none of the allowed forms"]
    if schema.get("x-kubernetes-int-or-string") and not (
        isinstance(value, str) or _type_ok("integer", value)
    ):
        return [f"{where}: must be an integer or a string"]
    kind = schema.get("type")
    if kind is not None and not _type_ok(kind, value):
        return [f"{where}: must be of type {kind}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors += validate(schema["items"], item, f"{path}[{index}]")
    if isinstance(value, dict) and kind == "object":
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
        for key in schema.get("required", ()):
            if key not in value:
                errors.append(f"{path + '.' if path else ''}{key}: Required value")
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if properties is not None and key in properties:
                errors += validate(properties[key], item, child)
            elif isinstance(extra, dict):
                errors += validate(extra, item, child)
            elif not preserve and properties is not None:
                errors.append(f"{child}: unknown field")
    return errors
