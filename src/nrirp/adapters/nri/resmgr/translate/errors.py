"""The error raised when a value cannot cross between NRI messages and the domain."""

from __future__ import annotations


class TranslationError(ValueError):
    """A message field (or a domain value) that has no valid counterpart; names the field."""
