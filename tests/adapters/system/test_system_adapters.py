"""System adapters: structured log formats, the decision log, config file change detection."""

from __future__ import annotations

import io
import json
import logging
import os
from pathlib import Path

import pytest

from nrirp.adapters.system import (
    ConfigFileError,
    ConfigFileWatcher,
    LoggingDecisionLog,
    configure_logging,
    read_config_file,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.ports.decisions import Decision, Notice, Severity


def decision() -> Decision:
    return Decision(
        operation="create-container",
        container_id="c1",
        container="app",
        pod="web",
        namespace="prod",
        cpus=CPUSet.parse("2-3"),
        mems=CPUSet.parse("0"),
        reason="pinned by annotation",
    )


@pytest.fixture
def restore_nrirp_logger() -> object:
    logger = logging.getLogger("nrirp")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield None
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def test_decision_is_one_json_line_with_fields(restore_nrirp_logger: object) -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    LoggingDecisionLog().decision(decision())
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["msg"] == "decision" and record["logger"] == "nrirp.decisions"
    assert {k: record[k] for k in ("container", "pod", "namespace", "cpus", "mems", "reason")} == {
        "container": "app",
        "pod": "web",
        "namespace": "prod",
        "cpus": "2-3",
        "mems": "0",
        "reason": "pinned by annotation",
    }
    assert record["operation"] == "create-container" and record["container_id"] == "c1"


def test_decision_text_line_quotes_values_with_spaces(restore_nrirp_logger: object) -> None:
    stream = io.StringIO()
    configure_logging("info", "text", stream)
    LoggingDecisionLog().decision(decision())
    line = stream.getvalue().strip()
    assert "\n" not in line
    assert " info nrirp.decisions: decision operation=create-container container=app " in line
    assert 'cpus=2-3 mems=0 reason="pinned by annotation"' in line


def test_notice_uses_its_severity(restore_nrirp_logger: object) -> None:
    stream = io.StringIO()
    configure_logging("warning", "json", stream)
    log = LoggingDecisionLog()
    log.notice(Notice("policy", "quiet", Severity.INFO))
    log.notice(Notice("state", "state not saved", Severity.ERROR, "c9"))
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(r["level"], r["msg"], r["source"]) for r in records] == [
        ("error", "state not saved", "state")
    ]
    assert records[0]["container_id"] == "c9"


def test_configure_logging_rejects_unknown_values() -> None:
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        configure_logging("info", "xml")
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging("loud", "text")


def test_watcher_sees_in_place_writes_and_replacement(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("a: 1\n")
    watcher = ConfigFileWatcher(str(path))
    assert not watcher.changed()
    path.write_text("a: 22\n")  # size changes
    assert watcher.changed()
    assert not watcher.changed()  # once per change
    replacement = tmp_path / "new.yaml"
    replacement.write_text("a: 33\n")
    os.replace(replacement, path)  # ConfigMap-style swap: new inode
    assert watcher.changed()
    path.unlink()
    assert not watcher.changed()  # gone: nothing to reload
    path.write_text("b: 1\n")
    assert watcher.changed()


def test_read_config_file_names_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=f"config file {tmp_path}/nope.yaml does not exist"):
        read_config_file(str(tmp_path / "nope.yaml"))
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigFileError, match=f"cannot read config file {tmp_path}/bin"):
        read_config_file(str(tmp_path / "bin"))
