"""``nrirp hardware``: show the machine's topology, list or materialise fake machines."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from nrirp.app.commands.common.hardware_source import (
    add_hardware_arguments,
    hardware_from_args,
    hardware_usage_problem,
)

HELP = "show the hardware topology (real /sys, another sysfs tree, or a fake machine)"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "hardware",
        help=HELP,
        description=HELP + ". With no options it reads this machine's /sys.",
    )
    add_hardware_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the JSON document")
    parser.add_argument(
        "--list-machines", action="store_true", help="list the catalogue of fake machines"
    )
    parser.add_argument(
        "--write-sysfs",
        metavar="DIR",
        help="write the --machine as a sysfs tree into DIR (new or empty) instead of showing it",
    )
    parser.add_argument(
        "--write-procfs",
        metavar="DIR",
        help="with --write-sysfs: also write the procfs files discovery reads (meminfo: the "
        "memory of a kernel without NUMA) into DIR (new or empty)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from nrirp.adapters.fakehw import MachineSpecError, SysfsTreeError, UnknownMachineError
    from nrirp.domain.ports.hardware import HardwareDiscoveryError

    problem = hardware_usage_problem(args) or _usage_problem(args)
    if problem is not None:
        print(f"nrirp hardware: error: {problem}", file=sys.stderr)
        return 2
    try:
        if args.list_machines:
            return _list_machines(args)
        if args.write_sysfs is not None:
            return _write_sysfs(args)
        if args.write_procfs is not None:
            print("nrirp hardware: error: --write-procfs needs --write-sysfs", file=sys.stderr)
            return 2
        return _show(args)
    except (
        HardwareDiscoveryError,
        MachineSpecError,
        UnknownMachineError,
        SysfsTreeError,
    ) as err:
        print(f"nrirp hardware: error: {err}", file=sys.stderr)
        return 1


def _usage_problem(args: argparse.Namespace) -> str | None:
    """Options that would be ignored in this combination."""
    if args.list_machines and (args.machine or args.sysfs_root or args.write_sysfs):
        return (
            "--list-machines lists the catalogue: not with --machine, --sysfs-root or --write-sysfs"
        )
    if args.write_sysfs is not None and args.memory_type:
        return (
            "--memory-type is not written into a sysfs tree (sysfs has no such file): give it "
            "when the tree is read"
        )
    return None


def _show(args: argparse.Namespace) -> int:
    from nrirp.app.commands.common.hardware_report import machine_document, machine_summary

    discovery, source = hardware_from_args(args)
    machine = discovery.discover()
    if args.json:
        print(json.dumps(machine_document(machine, source), indent=2))
    else:
        print(machine_summary(machine, source))
    return 0


def _list_machines(args: argparse.Namespace) -> int:
    from nrirp.adapters.fakehw import load_machine, machine_names

    specs = [load_machine(name) for name in machine_names()]
    if args.json:
        print(json.dumps([{"name": s.name, "description": s.description} for s in specs], indent=2))
        return 0
    width = max(len(s.name) for s in specs)
    for spec in specs:
        print(f"{spec.name:<{width}}  {spec.description}")
    return 0


def _write_sysfs(args: argparse.Namespace) -> int:
    from nrirp.adapters.fakehw import load_machine_or_file, resolve, write_procfs, write_sysfs
    from nrirp.domain.topology import classify_memory_types

    if args.machine is None:
        print("nrirp hardware: error: --write-sysfs needs --machine", file=sys.stderr)
        return 2
    spec = load_machine_or_file(args.machine)
    layout = resolve(spec, args.machine)
    written = args.write_sysfs
    try:
        write_sysfs(layout, args.write_sysfs)
        if args.write_procfs is not None:
            written = args.write_procfs
            write_procfs(layout, args.write_procfs)
    except OSError as err:
        print(f"nrirp hardware: error: cannot write {written}: {err}", file=sys.stderr)
        return 1
    cpus = len(layout.online)
    print(f"wrote the sysfs tree of {spec.name} ({cpus} online CPUs) to {args.write_sysfs}")
    if args.write_procfs is not None:
        print(f"wrote its procfs meminfo to {args.write_procfs}")
    elif not layout.numa:
        print(
            "note: a kernel without NUMA has no node directories; discovery reads the memory "
            "size from procfs meminfo: write it with --write-procfs DIR and read the tree "
            "with --procfs-root DIR"
        )
    by_rule = classify_memory_types(
        {n.id: n.memory_bytes for n in layout.nodes},
        {n.id for n in layout.nodes if n.cpus & layout.online},
    )
    differing = {n: t for n, t in layout.declared_memory_types.items() if by_rule[n] is not t}
    if differing:
        flags = " ".join(f"--memory-type {n}={t.value}" for n, t in sorted(differing.items()))
        print(f"note: sysfs cannot carry the spec's memory types; read it back with {flags}")
    return 0
