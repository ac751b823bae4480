"""Structured logging: ``key=value`` text lines or one JSON object per line.

Records may carry structured fields in ``extra={"fields": {...}}``; both formatters print them
(text: ``key=value`` after the message, values with spaces quoted; JSON: top-level keys).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

FIELDS = "fields"


def record_fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields = getattr(record, FIELDS, None)
    return fields if isinstance(fields, Mapping) else {}


def _text_value(value: Any) -> str:
    text = "" if value is None else str(value)
    if not text or any(c in text for c in ' "=\t\n'):
        return json.dumps(text)
    return text


class TextFormatter(logging.Formatter):
    """``2024-01-01T00:00:00.123Z level logger: message key=value ...``."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line = (
            f"{stamp}.{int(record.msecs):03d}Z {record.levelname.lower()} {record.name}: "
            f"{record.getMessage()}"
        )
        fields = record_fields(record)
        if fields:
            line += " " + " ".join(f"{k}={_text_value(v)}" for k, v in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """``{"time": ..., "level": ..., "logger": ..., "msg": ..., <fields>}`` per line."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": record.created,
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record_fields(record).items():
            data.setdefault(key, value)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def configure_logging(
    level: str = "info", fmt: str = "text", stream: TextIO | None = None
) -> logging.Handler:
    """Send the ``nrirp`` loggers to ``stream`` (stderr) in ``fmt`` (text|json) at ``level``."""
    if fmt not in ("text", "json"):
        raise ValueError(f"unknown log format {fmt!r} (text or json)")
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r} (debug, info, warning, error)")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    logger = logging.getLogger("nrirp")
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(numeric)
    logger.propagate = False
    return handler
