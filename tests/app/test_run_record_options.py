"""``nrirp run``'s recording limits without ``--record`` would be ignored: refused, exit 2,
before anything starts."""

from __future__ import annotations

import pytest

from nrirp.app.cli import main
from nrirp.app.commands.common.recording import DEFAULT_FILES, DEFAULT_MAX_BYTES
from nrirp.app.commands.run import EXIT_CONFIG


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--record-files", "3"], "--record-files limits a recording"),
        (["--record-max-bytes", "1M"], "--record-max-bytes limits a recording"),
        (
            ["--record-max-bytes", "1M", "--record-files", "3"],
            "--record-max-bytes and --record-files limit a recording",
        ),
    ],
)
def test_recording_limits_without_a_recording_are_refused(
    options: list[str], said: str, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--policy", "topology-aware", "--state-dir", str(tmp_path), *options])
    err = capsys.readouterr().err
    assert code == EXIT_CONFIG == 2
    assert f"{said}, and there is none: give --record FILE" in err
    assert err.count("\n") == 1  # one line, nothing started


def test_the_limits_default_when_recording() -> None:
    from argparse import Namespace

    from nrirp.app.commands.common.recording import record_limits, record_usage_problem

    args = Namespace(record="r.yaml", record_max_bytes=None, record_files=None)
    assert record_usage_problem(args) is None
    assert record_limits(args) == (DEFAULT_MAX_BYTES, DEFAULT_FILES)
    args = Namespace(record="r.yaml", record_max_bytes=1 << 20, record_files=2)
    assert record_limits(args) == (1 << 20, 2)
