"""Plain data as one line of YAML: compact JSON (a YAML flow collection) whose strings stay
one line and read back as they were written.

JSON is YAML, except that YAML 1.1 takes some characters JSON writes as they are for line
breaks (NEL, LINE and PARAGRAPH SEPARATOR) or refuses them in a document (DEL, C1 controls,
BOM, U+FFFE/U+FFFF): those are written as ``\\uXXXX`` escapes, which both read back as the
character. Everything else non-ASCII stays UTF-8.

The JSON is made by msgspec's encoder (already installed for lightkube): about ten times
faster than the standard library's for the recorder's containers, which matters because the
recorder's thread shares the daemon's CPU (``bench/gomockrt_record.py``). Values it cannot
encode (an integer beyond 64 bits) fall back to the standard library's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import msgspec

_RISKY = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]|\xef\xbb\xbf|\xef\xbf[\xbe\xbf]")
"""UTF-8 of the characters to escape (their lead bytes never continue another character)."""


def _escape(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode())


def _plain(value: Any) -> Any:
    """What msgspec does not know: read-only mappings and other collections (and, for the
    standard library's encoder, attrs values: msgspec writes them by their field names)."""
    if isinstance(value, Mapping):
        return dict(value)
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"cannot record a {type(value).__name__}")


_ENCODER = msgspec.json.Encoder(enc_hook=_plain)


def yaml_bytes(data: Any) -> bytes:
    """``data`` (JSON-compatible) as one line of YAML in UTF-8, without the line break."""
    try:
        raw = _ENCODER.encode(data)
    except (TypeError, OverflowError, msgspec.EncodeError):
        raw = json.dumps(
            data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_plain
        ).encode()
    if raw.isascii() and b"\x7f" not in raw:
        return raw
    return _RISKY.sub(_escape, raw)


def yaml_line(data: Any) -> str:
    """:func:`yaml_bytes` as text."""
    return yaml_bytes(data).decode()
