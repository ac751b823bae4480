"""Choosing the hardware a command works on: the real ``/sys``, another sysfs tree, or a fake.

``hardware`` and ``simulate`` share these options: ``--sysfs-root DIR`` | ``--machine NAME|FILE``,
plus ``--procfs-root DIR`` and ``--memory-type NODE=TYPE``; ``run`` reads a sysfs tree only and
shares ``--memory-type``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.topology import MemoryType

if TYPE_CHECKING:
    pass


def parse_memory_type(text: str) -> tuple[int, MemoryType]:
    """``NODE=TYPE`` (e.g. ``4=pmem``) for ``--memory-type``."""
    node, sep, kind = text.partition("=")
    types = {t.value: t for t in MemoryType}
    if not sep or not node.strip().isdigit() or kind.strip().lower() not in types:
        raise argparse.ArgumentTypeError(
            f"expected NODE=TYPE with TYPE one of {', '.join(types)}, got {text!r}"
        )
    return int(node), types[kind.strip().lower()]


def add_hardware_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--sysfs-root``/``--machine`` (mutually exclusive) and ``--memory-type``."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--sysfs-root",
        metavar="DIR",
        help="read the hardware from the sysfs tree at DIR (default: /sys)",
    )
    source.add_argument(
        "--machine",
        metavar="NAME|FILE",
        help="use a fake machine: a catalogue name (see --list-machines) or a spec file",
    )
    parser.add_argument(
        "--procfs-root",
        metavar="DIR",
        help="with a sysfs tree: the procfs whose meminfo gives the memory size on kernels "
        "without NUMA (default: the proc directory beside the sysfs root, /proc for /sys)",
    )
    add_memory_type_argument(parser)


def add_memory_type_argument(parser: argparse.ArgumentParser) -> None:
    """``--memory-type NODE=TYPE`` (repeatable), collected as ``[(node, MemoryType), ...]``."""
    parser.add_argument(
        "--memory-type",
        metavar="NODE=TYPE",
        action="append",
        type=parse_memory_type,
        default=[],
        help="set a NUMA node's memory type (dram, pmem, hbm), overriding the size rule; "
        "repeatable",
    )


def hardware_usage_problem(args: argparse.Namespace) -> str | None:
    """Why the hardware options do not go together, or ``None`` (``--procfs-root`` only
    changes what a sysfs tree is read with: a fake machine writes its own)."""
    if getattr(args, "procfs_root", None) is not None and getattr(args, "machine", None):
        return "--procfs-root goes with a sysfs tree, not with --machine (it writes its own)"
    return None


def hardware_from_args(args: argparse.Namespace) -> tuple[HardwareDiscovery, str]:
    """The discovery adapter the options select, and a short description of the source.

    Raises MachineSpecError / UnknownMachineError for a bad ``--machine``.
    """
    overrides = dict(args.memory_type)
    if args.machine is not None:
        from nrirp.adapters.fakehw import FakeHardwareDiscovery, load_machine_or_file

        spec = load_machine_or_file(args.machine)
        fake = FakeHardwareDiscovery(spec, overrides)
        return fake, f"fake machine {spec.name}"
    from nrirp.adapters.sysfs import SysfsDiscovery

    root = args.sysfs_root or "/sys"
    procfs = getattr(args, "procfs_root", None)
    return SysfsDiscovery(root, overrides, procfs), f"sysfs at {root}"
