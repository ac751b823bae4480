"""Reading the config file within its budget (issue 9 item 2): regular files only, never
opened for reading when they are FIFOs or devices, size-capped, and always in bounded time."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from nrirp.adapters.documents import CONFIG, Budget
from nrirp.adapters.system import ConfigFileError, read_config_file


def test_a_regular_file_and_a_symlink_to_one_are_read(tmp_path: Path) -> None:
    data = tmp_path / "..data"
    data.mkdir()
    (data / "config.yaml").write_text("pinCPU: false\n")
    link = tmp_path / "config.yaml"  # a ConfigMap mount: a symlink into ..data
    link.symlink_to(data / "config.yaml")
    assert read_config_file(str(link)) == "pinCPU: false\n"


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: os.mkfifo(p), "a FIFO"),  # opened for reading, it would wait for a writer
        (lambda p: p.symlink_to("/dev/zero"), "a character device"),  # read, it never ends
        (lambda p: p.mkdir(), "a directory"),
        (lambda p: socket.socket(socket.AF_UNIX).bind(str(p)), "a socket"),
    ],
)
def test_anything_but_a_regular_file_is_refused_unread(
    tmp_path: Path, make: object, kind: str
) -> None:
    path = tmp_path / "config.yaml"
    make(path)  # type: ignore[operator]
    with pytest.raises(ConfigFileError) as err:
        read_config_file(str(path))
    assert str(err.value) == (
        f"config file {path} is {kind}, not a regular file (refused without reading it)"
    )


def test_a_file_over_the_config_budget_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    with open(path, "wb") as out:
        out.truncate(CONFIG.max_bytes + 1)  # sparse: reading it would take long, not refusing
    with pytest.raises(ConfigFileError, match=r"policy configuration too large: 1048577 bytes"):
        read_config_file(str(path))
    path.write_bytes(b"#" * CONFIG.max_bytes)  # exactly the budget is fine
    assert len(read_config_file(str(path))) == CONFIG.max_bytes


def test_a_file_reporting_no_size_is_read_only_up_to_the_budget() -> None:
    # procfs files report size 0; the read stops one byte past the budget all the same
    tiny = Budget("policy configuration", 16, 32, 1000)
    with pytest.raises(ConfigFileError, match="too large: more than 16 bytes"):
        read_config_file("/proc/self/status", tiny)


def test_missing_unreadable_and_non_utf8_files_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=f"config file {tmp_path}/nope.yaml does not exist"):
        read_config_file(str(tmp_path / "nope.yaml"))
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigFileError, match=f"cannot read config file {tmp_path}/bin: not UTF-8"):
        read_config_file(str(tmp_path / "bin"))
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "gone.yaml")
    with pytest.raises(ConfigFileError, match="does not exist"):
        read_config_file(str(dangling))
