"""The catalogue of named fake machines shipped with the package (``machines/*.yaml``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from nrirp.adapters.fakehw.errors import MachineSpecError
from nrirp.adapters.fakehw.loading import spec_from_file, spec_from_yaml
from nrirp.adapters.fakehw.spec import MachineSpec

_PACKAGE = "nrirp.adapters.fakehw.machines"


class UnknownMachineError(LookupError):
    """No catalogue machine has that name."""


def machine_names() -> list[str]:
    """Names of the catalogue machines, sorted."""
    return sorted(
        entry.name.removesuffix(".yaml")
        for entry in resources.files(_PACKAGE).iterdir()
        if entry.name.endswith(".yaml")
    )


def load_machine(name: str) -> MachineSpec:
    """The catalogue machine ``name``."""
    entry = resources.files(_PACKAGE) / f"{name}.yaml"
    if not name or "/" in name or not entry.is_file():
        known = ", ".join(machine_names())
        raise UnknownMachineError(f"no catalogue machine named {name!r} (known: {known})")
    spec = spec_from_yaml(entry.read_text(), f"catalogue machine {name}")
    if spec.name != name:
        raise MachineSpecError(f"catalogue machine {name}: its spec is named {spec.name!r}")
    return spec


def load_machine_or_file(name_or_path: str) -> MachineSpec:
    """A catalogue machine by name, or a spec file when the argument names an existing file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.is_file():
        return spec_from_file(path)
    return load_machine(name_or_path)
