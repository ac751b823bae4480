"""Plain data as one line of YAML: compact JSON (a YAML flow collection) whose strings stay
one line and read back as they were written.

JSON is YAML, except that YAML 1.1 takes some characters JSON writes as they are for line
breaks (NEL, LINE and PARAGRAPH SEPARATOR) or refuses them in a document (C1 controls, DEL,
BOM, U+FFFE/U+FFFF): those are written as ``\\uXXXX`` escapes, which both read back as the
character. Everything else non-ASCII stays UTF-8.
"""

from __future__ import annotations

import json
import re
from typing import Any

_RISKY = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def yaml_line(data: Any) -> str:
    """``data`` (JSON-compatible) as one line of YAML, without the line break."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _RISKY.sub(_escape, text)
