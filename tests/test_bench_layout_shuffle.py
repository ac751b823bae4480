"""``bench/layout_shuffle.py``: the benchmarks' setup-randomization wrapper starts the real CLI,
with the heap padded differently per seed and the same per seed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

WRAPPER = Path(__file__).resolve().parents[1] / "bench" / "layout_shuffle.py"


def load_wrapper() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layout_shuffle", WRAPPER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_runs_the_cli_with_its_arguments() -> None:
    shuffled = subprocess.run(
        [sys.executable, str(WRAPPER), "--seed", "7", "--import", "decimal", "--", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    plain = subprocess.run(
        [sys.executable, "-m", "nrirp", "--help"], capture_output=True, text=True, check=True
    )
    assert shuffled.stdout == plain.stdout
    assert "usage: nrirp" in shuffled.stdout


def test_the_cli_exit_status_passes_through() -> None:
    result = subprocess.run(
        [sys.executable, str(WRAPPER), "--", "no-such-command"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "no-such-command" in result.stderr


def test_padding_depends_on_the_seed_only() -> None:
    wrapper = load_wrapper()
    first = wrapper.shuffle_heap(1)
    assert wrapper.shuffle_heap(1) == first
    sizes = {wrapper.shuffle_heap(seed) for seed in range(2, 12)}
    assert len(sizes) > 5
    assert all(4096 <= size < 4 * 1024 * 1024 for size in sizes | {first})
