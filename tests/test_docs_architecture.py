"""docs/architecture.md names modules and classes by their import paths (``adapters.x.Y``,
``nrirp.domain.z``): every one of them exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
PREFIXES = ("nrirp", "adapters", "domain", "app", "simruntime", "testing")


def dotted_names() -> list[str]:
    """The backquoted ``a.b.C`` names under the package (a call's arguments dropped)."""
    found = set()
    for span in re.findall(r"`([^`\n]+)`", DOC.read_text()):
        name = re.sub(r"\(.*$", "", span).strip()
        if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", name) and name.startswith(PREFIXES):
            found.add(name if name.startswith("nrirp.") else f"nrirp.{name}")
    return sorted(found)


def test_the_document_names_some() -> None:
    assert len(dotted_names()) > 20


@pytest.mark.parametrize("name", dotted_names())
def test_every_named_module_and_class_exists(name: str) -> None:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            assert hasattr(found, attribute), f"{name}: no {attribute} in {found!r}"
            found = getattr(found, attribute)
        return
    pytest.fail(f"{name}: no such module")
