"""Loading machine specs: strict types, unknown keys rejected, every problem named by path."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrirp.adapters.fakehw import (
    MachineSpecError,
    load_machine,
    machine_names,
    spec_from_data,
    spec_from_file,
    spec_from_yaml,
    spec_to_data,
)
from nrirp.adapters.fakehw.loading import format_size, parse_size
from nrirp.adapters.fakehw.spec import CacheScope, Numbering
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheType, MemoryType

MINIMAL = "name: tiny\ncompact: {cores_per_node: 2}\n"


def errors_of(text: str) -> str:
    with pytest.raises(MachineSpecError) as info:
        spec_from_yaml(text, "test.yaml")
    message = str(info.value)
    assert message.startswith("test.yaml: ")
    return message


def test_minimal_spec_gets_defaults() -> None:
    spec = spec_from_yaml(MINIMAL)
    assert spec.name == "tiny" and spec.compact is not None
    assert spec.compact.packages == 1 and spec.compact.threads_per_core == 1
    assert spec.compact.numbering is Numbering.SMT_ADJACENT
    assert [c.shared_by for c in spec.caches][-1] is CacheScope.DIE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MINIMAL + "colour: red\n", "extra fields found (colour) @ $"),
        (
            "name: x\ncompact: {cores_per_node: 2, sockets: 2}\n",
            "extra fields found (sockets) @ $.compact",
        ),
        (
            "name: x\ncompact: {cores_per_node: '2'}\n",
            "expected an integer, got '2' @ $.compact.cores_per_node",
        ),
        (
            "name: x\ncompact: {packages: true}\n",
            "expected an integer, got True @ $.compact.packages",
        ),
        (
            "name: x\ncompact: {packages: 1.5}\n",
            "expected an integer, got 1.5 @ $.compact.packages",
        ),
        (
            "name: x\ncompact: {numbering: zigzag}\n",
            "expected one of 'smt-adjacent', 'smt-last', got 'zigzag' @ $.compact.numbering",
        ),
        (
            "name: x\ncompact: {memory_per_node: lots}\n",
            "expected a size such as 4096, '48K' or '16Gi', got 'lots' @ $.compact.memory_per_node",
        ),
        ("name: x\ncompact: 3\n", "expected a mapping, got 3 @ $.compact"),
        ("compact: {}\n", "required field missing @ $.name"),
        ("name: 7\ncompact: {}\n", "expected a string, got 7 @ $.name"),
        (
            MINIMAL + "memory_nodes: [{memory: 1Gi, nearest: 0, type: optane}]\n",
            "expected one of 'dram', 'pmem', 'hbm', got 'optane' @ $.memory_nodes[0].type",
        ),
        (
            MINIMAL + "memory_nodes: [{nearest: 0}]\n",
            "required field missing @ $.memory_nodes[0].memory",
        ),
        (MINIMAL + "isolated: 0-x\n", "invalid cpu list '0-x'"),
        (
            MINIMAL + "caches: [{level: 2, shared_by: socket}]\n",
            "got 'socket' @ $.caches[0].shared_by",
        ),
        ("- a\n- b\n", "expected a mapping, got ['a', 'b'] @ $"),
        # a string or a mapping where a list is expected is refused, not iterated
        (MINIMAL + "host: {cpuidle: C1}\n", "expected a list, got 'C1' @ $.host.cpuidle"),
        (MINIMAL + "memory_nodes: ab\n", "expected a list, got 'ab' @ $.memory_nodes"),
        (
            "name: x\nexplicit: {nodes: {a: 1}}\n",
            "expected a list, got {'a': 1} @ $.explicit.nodes",
        ),
        (MINIMAL + "caches: 3\n", "expected a list, got 3 @ $.caches"),
        (MINIMAL + "distances: [10]\n", "expected a list, got 10 @ $.distances[0]"),
    ],
)
def test_structure_errors_name_the_path_and_value(text: str, expected: str) -> None:
    assert expected in errors_of(text)


def test_every_structure_problem_is_listed() -> None:
    message = errors_of("name: x\ncompact: {packages: a, cores_per_node: b, extra: 1}\n")
    assert "$.compact.packages" in message and "$.compact.cores_per_node" in message
    assert "extra fields found (extra)" in message


def test_duplicate_yaml_keys_are_rejected() -> None:
    assert "duplicate key 'name'" in errors_of("name: a\nname: b\ncompact: {}\n")


def test_invalid_yaml() -> None:
    assert "not valid YAML" in errors_of("name: [unclosed\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\n", "exactly one of 'compact' and 'explicit' must be given @ $"),
        (
            "name: x\ncompact: {}\nexplicit: {nodes: []}\n",
            "exactly one of 'compact' and 'explicit'",
        ),
        ("name: x\ncompact: {packages: 0}\n", "must be at least 1, got 0 @ $.compact.packages"),
        (
            "name: x\ncompact: {threads_per_core: 0}\n",
            "must be at least 1, got 0 @ $.compact.threads_per_core",
        ),
        (
            "name: x\ncompact: {memory_per_node: 1000}\n",
            "must be a multiple of 1K (sysfs reports kB), got 1000 @ $.compact.memory_per_node",
        ),
        (
            "name: x\ncompact: {cores_per_node: 2, cpu_ids: '0,5,9'}\n",
            "has 3 ids but the machine has 2 CPUs @ $.compact.cpu_ids",
        ),
        (MINIMAL + "offline: '7'\n", "cpus 7 do not exist @ $.offline"),
        (MINIMAL + "offline: '0-1'\n", "at least one CPU must stay online @ $.offline"),
        (MINIMAL + "offline: '1'\nisolated: '1'\n", "cpus 1 are not online CPUs @ $.isolated"),
        (
            MINIMAL + "memory_nodes: [{memory: 1Gi, nearest: 3}]\n",
            "3 is not a node with CPUs @ $.memory_nodes[0].nearest",
        ),
        (
            MINIMAL + "memory_nodes: [{memory: 1Gi}]\n",
            "required when no distance matrix is given @ $.memory_nodes[0].nearest",
        ),
        (
            MINIMAL + "memory_nodes: [{memory: 1Gi, nearest: 0, id: 0}]\n",
            "node id 0 is negative or already used @ $.memory_nodes[0].id",
        ),
        (
            MINIMAL + "memory_nodes: [{memory: 1Gi, nearest: 0, distance: 10}]\n",
            "must be in 11..255, got 10 @ $.memory_nodes[0].distance",
        ),
        (MINIMAL + "distances: [[10, 20]]\n", "must be a 1x1 matrix (nodes [0]) @ $.distances"),
        (MINIMAL + "distances: [[12]]\n", "must be 10 on the diagonal, got 12 @ $.distances[0][0]"),
        (
            "name: x\ncompact: {nodes_per_die: 2}\ndistances: [[10, 10], [21, 10]]\n",
            "must be in 11..255 off the diagonal, got 10 @ $.distances[0][1]",
        ),
        (
            "name: x\ncompact: {nodes_per_die: 2}\n"
            "memory_nodes: [{memory: 1Gi, nearest: 1}]\n"
            "distances: [[10, 21, 17], [21, 10, 28], [17, 28, 10]]\n",
            "node 2 is declared nearest to node 1 but the matrix puts node 0 closest",
        ),
        (
            MINIMAL + "caches: [{level: 2}, {level: 2}]\n",
            "L2 unified is listed twice @ $.caches[1]",
        ),
        (MINIMAL + "caches: [{level: 0}]\n", "must be at least 1, got 0 @ $.caches[0].level"),
        (
            MINIMAL + "caches: [{level: 2, size: 1000}]\n",
            "must be a positive multiple of 1K, got 1000 @ $.caches[0].size",
        ),
    ],
)
def test_validation_errors_name_the_path(text: str, expected: str) -> None:
    assert expected in errors_of(text)


EXPLICIT = """
name: odd
explicit:
  nodes:
    - id: 0
      package: 0
      memory: 1Gi
      cores:
        - {id: 0, cpus: "0,8"}
        - {id: 1, cpus: "1,9"}
    - id: 1
      package: 0
      die: 1
      memory: 1Gi
      cores:
        - {id: 2, cpus: "2"}
"""


def test_explicit_form() -> None:
    spec = spec_from_yaml(EXPLICIT)
    assert spec.explicit is not None
    assert spec.explicit.nodes[0].cores[1].cpus == CPUSet.parse("1,9")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('cpus: "2"}', 'cpus: "1"}', "cpu 1 already belongs to $.explicit.nodes[0].cores[1]"),
        ("{id: 2,", "{id: 1,", "core 1 of package 0 is already defined at $.explicit.nodes[0]"),
        ('cpus: "2"}', 'cpus: "2", cluster: 0}', "cluster 0 of package 0 is on die 0"),
        ('cpus: "2"}', 'cpus: ""}', "a core needs at least one CPU @ $.explicit.nodes[1].cores[0]"),
        ("    - id: 1\n", "    - id: 0\n", "node 0 is already defined at $.explicit.nodes[0]"),
        (
            "      die: 1\n",
            "      die: -1\n",
            "must not be negative, got -1 @ $.explicit.nodes[1].die",
        ),
    ],
)
def test_explicit_validation(old: str, new: str, expected: str) -> None:
    assert old in EXPLICIT
    assert expected in errors_of(EXPLICIT.replace(old, new, 1))


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (4096, 4096),
        ("48K", 48 << 10),
        ("48Ki", 48 << 10),
        ("48KiB", 48 << 10),
        ("48KB", 48 << 10),
        ("16Gi", 16 << 30),
        ("1TiB", 1 << 40),
        (" 2 M ", 2 << 20),
        ("123", 123),
    ],
)
def test_sizes(value: int | str, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize("value", ["1.5G", "-1", "G", "12X", True, -5, None, [1]])
def test_bad_sizes(value: object) -> None:
    with pytest.raises(ValueError, match=repr(value).replace("[", r"\[").replace("]", r"\]")):
        parse_size(value)


def test_format_size() -> None:
    assert [format_size(s) for s in (0, 1000, 1024, 3 << 20, 16 << 30, 2 << 40)] == [
        "0",
        "1000",
        "1Ki",
        "3Mi",
        "16Gi",
        "2Ti",
    ]


@pytest.mark.parametrize("name", machine_names())
def test_catalogue_specs_round_trip_through_plain_data(name: str) -> None:
    spec = load_machine(name)
    assert spec_from_data(spec_to_data(spec), name) == spec


def test_spec_file(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MINIMAL + "memory_nodes: [{memory: 2Gi, nearest: 0, type: hbm}]\n")
    spec = spec_from_file(path)
    assert spec.memory_nodes[0].type is MemoryType.HBM and spec.memory_nodes[0].memory == 2 << 30
    with pytest.raises(MachineSpecError, match="cannot read"):
        spec_from_file(tmp_path / "missing.yaml")


def test_cache_spec_defaults() -> None:
    spec = spec_from_yaml(MINIMAL + "caches: [{level: 3, shared_by: package}]\n")
    assert spec.caches[0].type is CacheType.UNIFIED and spec.caches[0].size is None
