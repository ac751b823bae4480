"""Helpers for sysfs adapter tests: unpacking dumps and writing small fake trees."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.fakehw.discovery import scratch_dir

DUMPS = Path(__file__).parent / "dumps"


def unpack_dump(name: str, root: Path) -> Path:
    """Recreate a ``path:content`` dump (``grep -R '' .`` style) as files under ``root``.

    Lines for the same path are joined in order; ``#`` lines are comments.
    """
    files: dict[str, list[str]] = {}
    for line in (DUMPS / name).read_text().splitlines():
        if line.startswith("#"):
            continue
        path, _, content = line.partition(":")
        files.setdefault(path, []).append(content)
    for path, lines in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n")
    return root


def write_catalogue_tree(name: str, root: Path) -> Path:
    """The sysfs tree of a catalogue machine under ``root / 'sys'``."""
    write_sysfs(resolve(load_machine(name)), root / "sys")
    return root / "sys"


def rewrite(root: Path, rel: str, content: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


@contextmanager
def scratch() -> Iterator[Path]:
    """A temporary directory on tmpfs when there is one: trees of many small files are slow
    to copy and delete on a journaling disk."""
    with tempfile.TemporaryDirectory(prefix="nrirp-test-", dir=scratch_dir()) as tmp:
        yield Path(tmp)
