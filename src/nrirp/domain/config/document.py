"""Config documents: a custom-resource document to its spec (text is parsed by the documents
adapter, ``nrirp.adapters.documents``; the domain receives data)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrirp.domain.config.errors import Issue, Path, quote

API_VERSION = "config.nri/v1alpha1"
CR_KEYS = ("apiVersion", "kind", "metadata", "spec", "status")
_CR_MARKERS = ("apiVersion", "kind", "spec")


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
