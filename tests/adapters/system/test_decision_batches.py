"""Decisions logged as a batch: one record with a row per decision, the same lines as before."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.system import LoggingDecisionLog, configure_logging
from nrirp.adapters.system import decision_log as decision_log_module
from nrirp.adapters.system.logs import FIELDS, ROWS, JsonFormatter, TextFormatter
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.ports.decisions import Decision


@pytest.fixture
def nrirp_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("nrirp")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield logger
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def _reference_text(fields: Mapping[str, Any]) -> str:
    """The ``key=value`` rendering as it was before batches (the format docs/daemon.md and the
    e2e tests read)."""

    def value(v: Any) -> str:
        text = "" if v is None else str(v)
        if not text or any(c in text for c in ' "=\t\n'):
            return json.dumps(text)
        return text

    return " ".join(f"{k}={value(v)}" for k, v in fields.items())


def _record(**extra: Any) -> logging.LogRecord:
    record = logging.LogRecord("nrirp.decisions", logging.INFO, __file__, 1, "decision", (), None)
    record.created, record.msecs = 1795301278.68, 680.0
    for key, value in extra.items():
        setattr(record, key, value)
    return record


field_values = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "a b", 'q"q', "k=v", "t\tt", "n\nn", "é ü", "0-3,8"]),
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
)
rows = st.lists(
    st.dictionaries(st.sampled_from(["cpus", "mems", "reason", "pod", "ok", "msg"]), field_values),
    min_size=1,
    max_size=5,
)


@settings(max_examples=200)
@given(rows)
def test_a_record_with_rows_prints_the_lines_of_one_record_per_row(
    field_rows: list[dict[str, Any]],
) -> None:
    """Text and JSON: each line of a record with rows is exactly the line a record with that
    row's fields gives (the text format as rendered before batches)."""
    text, js = TextFormatter(), JsonFormatter()
    batch = _record(**{ROWS: field_rows})
    singles = [_record(**{FIELDS: fields}) for fields in field_rows]
    assert text.format(batch).split("\n") == [text.format(r) for r in singles]
    assert js.format(batch).split("\n") == [js.format(r) for r in singles]
    prefix = "2026-11-21T22:47:58.680Z info nrirp.decisions: decision"
    for line, fields in zip(text.format(batch).split("\n"), field_rows, strict=True):
        assert line == (f"{prefix} {_reference_text(fields)}" if fields else prefix)
    for line, fields in zip(js.format(batch).split("\n"), field_rows, strict=True):
        head = {"time": 1795301278.68, "level": "info", "logger": "nrirp.decisions"}
        merged: dict[str, Any] = {**head, "msg": "decision"}
        for key, value in fields.items():
            merged.setdefault(key, value)
        assert line == json.dumps(merged, default=str)


def decisions(count: int) -> list[Decision]:
    return [
        Decision(
            operation="create-container",
            container_id=f"c{i}",
            container="app",
            pod=f"web-{i}",
            namespace="prod",
            cpus=CPUSet.parse("0-3,8"),
            mems=None,
            reason="shared 250m",
            ok=i % 2 == 0,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_batch_is_one_write_of_the_lines_of_each_decision(
    fmt: str, nrirp_logger: logging.Logger
) -> None:
    one_by_one, batched = io.StringIO(), io.StringIO()
    configure_logging("info", fmt, one_by_one)
    log = LoggingDecisionLog()
    for decision in decisions(5):
        log.decision(decision)
    writes: list[str] = []
    configure_logging("info", fmt, batched)
    write = batched.write
    batched.write = lambda text: writes.append(text) or write(text)  # type: ignore[method-assign]
    log.decision_batch(decisions(5))
    assert len(writes) == 1  # one record, one write
    expected = one_by_one.getvalue().splitlines()
    got = batched.getvalue().splitlines()
    assert len(got) == 5
    if fmt == "json":
        for line in (*expected, *got):
            assert json.loads(line)["msg"] == "decision"
        assert [_without_time(line) for line in got] == [_without_time(line) for line in expected]
    else:
        assert [line.split(" ", 1)[1] for line in got] == [
            line.split(" ", 1)[1] for line in expected
        ]
        assert 'reason="shared 250m"' in got[0] and "ok=False" in got[1]


def _without_time(line: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(line)
    del data["time"]
    return data


def test_handlers_that_do_not_print_rows_get_a_record_per_decision(
    nrirp_logger: logging.Logger,
) -> None:
    configure_logging("info", "text", io.StringIO())
    seen: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    nrirp_logger.addHandler(Collect())  # e.g. an embedder's own handler
    LoggingDecisionLog().decision_batch(decisions(3))
    assert [r.__dict__[FIELDS]["container_id"] for r in seen] == ["c0", "c1", "c2"]
    assert not any(hasattr(r, ROWS) for r in seen)


def test_below_info_nothing_is_rendered(
    nrirp_logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    configure_logging("warning", "text", stream)
    rendered: list[Decision] = []
    fields = decision_log_module._fields
    monkeypatch.setattr(decision_log_module, "_fields", lambda d: rendered.append(d) or fields(d))
    LoggingDecisionLog().decision_batch(decisions(4))
    assert rendered == [] and stream.getvalue() == ""


@pytest.mark.parametrize("count", [1, 3])
def test_the_lean_record_prints_what_a_record_with_the_fields_in_extra_prints(count: int) -> None:
    """The record made on the request path (time and decisions only) formats, text and JSON,
    exactly as a full ``LogRecord`` carrying the decisions' fields in ``extra`` does."""
    batch = decisions(count)
    lean = decision_log_module._DecisionRecord("nrirp.decisions", tuple(batch))
    lean.created, lean.msecs = 1795301278.68, 680.0
    rows = [decision_log_module._fields(d) for d in batch]
    full = _record(**({FIELDS: rows[0]} if count == 1 else {ROWS: rows}))
    for formatter in (TextFormatter(), JsonFormatter()):
        assert formatter.format(lean) == formatter.format(full)
    assert lean.getMessage() == "decision" and lean.levelname == "INFO"


def test_the_decisions_become_fields_only_when_the_line_is_formatted(
    nrirp_logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For handlers that print rows nothing of a decision is rendered on the caller's path:
    the daemon's log thread does it when it writes the line."""
    configure_logging("info", "text", io.StringIO())
    queued: list[logging.LogRecord] = []
    (handler,) = nrirp_logger.handlers
    monkeypatch.setattr(handler, "emit", queued.append)  # a queue, as the log thread has
    rendered: list[Decision] = []
    fields = decision_log_module._fields
    monkeypatch.setattr(decision_log_module, "_fields", lambda d: rendered.append(d) or fields(d))
    batch = decisions(2)
    LoggingDecisionLog().decision_batch(batch)
    assert len(queued) == 1 and rendered == []
    lines = handler.format(queued[0]).splitlines()
    assert rendered == batch and len(lines) == 2
    assert "container_id=c0" in lines[0] and "container_id=c1" in lines[1]


def test_a_list_field_is_its_items_in_text_and_an_array_in_json() -> None:
    """A reload's ``errors`` (a list): joined by ``; `` in text, not a Python repr with mixed
    quotes; a JSON array in JSON."""
    errors = ["reservedResources.cpu: not a CPU amount", "nope: unknown field"]
    record = _record(**{FIELDS: {"errors": errors, "pair": ("a", "b")}})
    line = TextFormatter().format(record)
    assert line.endswith(
        ' errors="reservedResources.cpu: not a CPU amount; nope: unknown field" pair="a; b"'
    )
    assert json.loads(JsonFormatter().format(record))["errors"] == errors


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_runtime_s_overlong_names_are_cut_in_the_decision_line(
    fmt: str, nrirp_logger: logging.Logger
) -> None:
    """docs/security.md: a name is quoted at most 200 characters long; a hostile runtime's
    100,000-character name made a 400 KB line."""
    out = io.StringIO()
    configure_logging("info", fmt, out)
    huge = "x" * 100_000
    LoggingDecisionLog().decision(
        Decision(
            operation="create-container",
            container_id=huge,
            container=huge,
            pod=huge,
            namespace=huge,
            cpus=None,
            mems=None,
            reason="shared",
        )
    )
    line = out.getvalue()
    assert line.count("\n") == 1 and len(line) < 1_200
    cut = "x" * 197 + "..."
    if fmt == "json":
        fields = json.loads(line)
        assert [fields[k] for k in ("container", "container_id", "pod", "namespace")] == [cut] * 4
    else:
        assert f"container={cut}" in line and f"pod={cut}" in line
