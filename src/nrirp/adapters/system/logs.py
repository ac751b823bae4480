"""Structured logging: ``key=value`` text lines or one JSON object per line.

Records may carry structured fields in ``extra={"fields": {...}}``; both formatters print them
(text: ``key=value`` after the message, values with spaces quoted, lists joined by ``; ``;
JSON: top-level keys, lists as arrays).

A record may also carry rows, ``extra={"field_rows": [{...}, ...]}`` (flat dicts): it is printed as
one line per row, each the line a record with those fields would give, all with the record's
time, level, logger and message. The decision log logs all decisions of an operation as one
such record (one record, one write, instead of hundreds), to handlers whose formatters say they
print rows (``renders_rows``), as these do.
"""

from __future__ import annotations

import atexit
import json
import json.encoder as json_encoder
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from nrirp.adapters.system.latency import Foreground

FIELDS = "fields"
ROWS = "field_rows"

_JSON = json.JSONEncoder(default=str)  # json.dumps(value, default=str) without its set-up
_RECORD_KEYS = frozenset({"time", "level", "logger", "msg"})
_quote = json_encoder.encode_basestring_ascii  # json.dumps of a str, in C


def _make_row_encoder() -> Callable[[dict[str, Any]], str]:
    """``_JSON.encode`` of a row, without its Python layers and the circular-reference check
    (rows are flat), so that one encoder serves every row."""
    make = getattr(json_encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C accelerator
        return _JSON.encode
    encode = make(None, _JSON.default, _quote, None, ": ", ", ", False, False, True)

    def encode_row(row: dict[str, Any]) -> str:
        return "".join(encode(row, 0))

    return encode_row


_encode_row = _make_row_encoder()


def record_fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields = getattr(record, FIELDS, None)
    return fields if isinstance(fields, Mapping) else {}


def record_rows(record: logging.LogRecord) -> Sequence[dict[str, Any]] | None:
    """The rows of a record that has some (``None``: a record of one line)."""
    rows = getattr(record, ROWS, None)
    return rows if isinstance(rows, Sequence) else None


def _text_fields(fields: Mapping[str, Any]) -> str:
    """``key=value ...``, values that are empty or hold a space, quote, ``=``, tab or newline
    quoted as JSON strings (inline: this runs for every decision line). A list or tuple is its
    items joined by ``; `` (``errors="a: bad; b: unknown field"``), not its Python repr."""
    parts = []
    for key, value in fields.items():
        if type(value) is str:
            text = value
        elif value is None:
            text = ""
        elif type(value) is list or type(value) is tuple:
            text = "; ".join([str(item) for item in value])
        else:
            text = str(value)
        if not text or " " in text or '"' in text or "=" in text or "\t" in text or "\n" in text:
            text = _quote(text)
        parts.append(f"{key}={text}")
    return " ".join(parts)


class TextFormatter(logging.Formatter):
    """``2024-01-01T00:00:00.123Z level logger: message key=value ...``."""

    renders_rows = True
    _second: tuple[int, str] = (-1, "")  # the last second rendered, and its text

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        last, stamp = self._second
        if second != last:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = (second, stamp)
        line = (
            f"{stamp}.{int(record.msecs):03d}Z {record.levelname.lower()} {record.name}: "
            f"{record.getMessage()}"
        )
        rows = record_rows(record)
        if rows is not None:
            line = "\n".join([f"{line} {_text_fields(f)}" if f else line for f in rows])
        else:
            fields = record_fields(record)
            if fields:
                line += " " + _text_fields(fields)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """``{"time": ..., "level": ..., "logger": ..., "msg": ..., <fields>}`` per line."""

    renders_rows = True

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": record.created,
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rows = record_rows(record)
        if rows is None:
            return self._line(data, record_fields(record), record)
        if record.exc_info:
            return "\n".join([self._line(data, fields, record) for fields in rows])
        # each line is what encoding the merged dict gives, from the two encoded parts
        head = _JSON.encode(data)
        start = head[:-1] + ", "
        lines = []
        for fields in rows:
            if not fields:
                lines.append(head)
            elif type(fields) is dict and _RECORD_KEYS.isdisjoint(fields):
                lines.append(start + _encode_row(fields)[1:])
            else:
                lines.append(self._line(data, fields, record))
        return "\n".join(lines)

    def _line(
        self, data: dict[str, Any], fields: Mapping[str, Any], record: logging.LogRecord
    ) -> str:
        merged = dict(data)
        for key, value in fields.items():
            merged.setdefault(key, value)
        if record.exc_info:
            merged["exception"] = self.formatException(record.exc_info)
        return _JSON.encode(merged)


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


QUIET = 0.02
"""Seconds without a new record after which the log thread writes what waits (the daemon's
requests have paused)."""
MAX_DELAY = 0.25
"""Seconds a record waits at most for such a pause: under a steady stream of requests the
thread writes this often, stepping aside for each request."""
MAX_WAITING = 4096
"""Records waiting at which the thread writes without waiting for a pause (seen when it looks:
after :data:`QUIET`, then at :data:`MAX_DELAY`)."""


class _Enqueue(logging.Handler):
    """Queues records as they are: formatting (the decision lines of a whole operation) is
    left to the output thread (``logging.handlers.QueueHandler`` formats in the caller's
    thread, and importing ``logging.handlers`` costs the daemon ``pickle`` and ``socket``).

    The thread is woken by the first record after it last looked, not by each: a thread woken
    in the middle of a request asks for the GIL there (under the Go harness a wake per record
    cost CreateContainer ~95 us at the median, ``docs/benchmarks.md``, *Log lines at the
    default level*)."""

    def __init__(self, records: deque[logging.LogRecord], wake: threading.Event) -> None:
        super().__init__()
        self._records = records
        self._wake = wake
        self.asleep = True
        """The thread looks at the records only once woken (set by it, cleared here)."""

    def handle(self, record: logging.LogRecord) -> bool:
        """:meth:`emit`, without the handler's lock (a deque's append needs none)."""
        if self.filters and not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self._records.append(record)
        if self.asleep:
            self.asleep = False
            self._wake.set()


class BackgroundOutput:
    """The ``nrirp`` loggers' output written by a thread: the caller only queues the record.

    Made by :func:`log_in_background`. Records keep their order. With ``foreground`` (the
    daemon's NRI event handlers) the thread writes at quiet moments: once no record came for
    :data:`QUIET` seconds and no request is being handled, or once the first waited
    :data:`MAX_DELAY` (or :data:`MAX_WAITING` wait); while it writes it steps aside, blocked,
    while a request is handled (at most ``max_pause`` each time). Without ``foreground`` it
    writes as soon as it is woken. :meth:`close` (also run at interpreter exit) writes what
    is queued, stops the thread and puts the output back on the logger, so later records are
    written at once. A process killed outright loses what waits (at most about
    :data:`MAX_DELAY` of lines).
    """

    def __init__(
        self,
        logger: logging.Logger,
        output: logging.Handler,
        foreground: Foreground | None = None,
        max_pause: float = 0.05,
    ) -> None:
        self._logger = logger
        self._output = output
        self._foreground = foreground
        self._max_pause = max_pause
        self._records: deque[logging.LogRecord] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        """Set by :meth:`close`: ends a wait for a quiet moment at once."""
        self._enqueue = _Enqueue(self._records, self._wake)
        self._enqueue.setFormatter(output.formatter)  # the decision log looks for rows there
        self._thread = threading.Thread(target=self._run, name="nrirp-log-writer", daemon=True)
        self._closed = False
        self.batches = 0
        """How many times the thread took what waited (once per quiet moment)."""
        self._thread.start()
        logger.addHandler(self._enqueue)
        logger.removeHandler(output)
        atexit.register(self.close)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._foreground is not None and not self._closed:
                self._wait_for_quiet(self._foreground)
            self._enqueue.asleep = True  # a record from here on wakes it again
            self.batches += 1
            self._write_waiting()
            if self._closed:
                return  # close() writes what came after this, once the thread ended

    def _wait_for_quiet(self, foreground: Foreground) -> None:
        """Return once no record came for :data:`QUIET` seconds and ``foreground`` is idle, or
        :data:`MAX_DELAY` after the start; it looks twice under a steady stream (each look
        takes the GIL, maybe in the middle of a request)."""
        records = self._records
        start = time.monotonic()
        seen = len(records)
        if self._stop.wait(QUIET):
            return
        while not self._closed:
            waiting = len(records)
            if waiting == seen and not foreground.busy:
                return
            left = MAX_DELAY - (time.monotonic() - start)
            if left <= 0 or waiting >= MAX_WAITING:
                return
            # lines still coming: look again when the first has waited MAX_DELAY; only a
            # request being handled: soon
            nap = left if waiting != seen else min(left, QUIET)
            seen = waiting
            if self._stop.wait(nap):
                return  # closing: written at once

    def _write_waiting(self) -> None:
        output, foreground, records = self._output, self._foreground, self._records
        while records:
            record = records.popleft()
            if foreground is not None and foreground.busy and not self._closed:
                foreground.wait_idle(self._max_pause)
            output.handle(record)  # Handler.handleError reports what fails

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, stop the thread, write directly again (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        handlers = self._logger.handlers
        if self._enqueue in handlers:  # swapped in one step: no record goes to both or neither
            handlers[handlers.index(self._enqueue)] = self._output
        else:
            self._logger.addHandler(self._output)
        self._wake.set()
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._write_waiting()  # queued by another thread after the thread's last look


def log_in_background(foreground: Foreground | None = None) -> BackgroundOutput | None:
    """Move the output of the ``nrirp`` loggers (as :func:`configure_logging` set it up) to a
    thread (see :class:`BackgroundOutput`); ``None`` when they have no single output."""
    logger = logging.getLogger("nrirp")
    if len(logger.handlers) != 1:
        return None
    return BackgroundOutput(logger, logger.handlers[0], foreground)
