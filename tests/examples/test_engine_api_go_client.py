"""examples/engine_api/go (a Go agent's side of the engine API, grpc-go) against ``nrirp run
--engine-api`` over a real unix socket: its committed stubs are those ``engine.proto`` makes
today, it is gofmt-formatted, go vet finds nothing and it builds with Debian's Go and
grpc-go, and it prints what the Python example prints against a daemon of its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tools import go_example

from tests.examples.test_engine_api_client import check_example_output, run_python_example
from tests.support.engine_daemon import engine_daemon
from tests.support.gomockrt import build_gomockrt


@pytest.fixture(scope="module")
def toolchain() -> Path:
    return build_gomockrt()


@pytest.fixture(scope="module")
def binary(toolchain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = tmp_path_factory.mktemp("go-example") / "engineclient"
    go_example.build(toolchain, built)
    return built


def test_the_committed_stubs_are_those_engine_proto_makes(toolchain: Path) -> None:
    assert go_example.stale(toolchain) == [], "run .venv/bin/python tools/go_example.py"


def test_the_go_client_prints_what_the_python_client_prints(binary: Path, tmp_path: Path) -> None:
    with engine_daemon(tmp_path / "go") as socket_path:
        done = subprocess.run(
            [str(binary), socket_path], capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 0, done.stderr
    check_example_output(done.stdout)
    assert done.stdout == run_python_example(tmp_path / "python")


def test_the_go_client_says_why_when_no_engine_answers(binary: Path, tmp_path: Path) -> None:
    # it waits 10 s for the daemon's socket to answer, as the Python example does
    done = subprocess.run(
        [str(binary), str(tmp_path / "nothing.sock")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Describe: rpc error: code = DeadlineExceeded")
    assert "nothing.sock: connect: no such file or directory" in done.stderr
