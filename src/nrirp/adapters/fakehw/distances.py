"""The node distance matrix of a fake machine: given in the spec, or computed."""

from __future__ import annotations

from nrirp.adapters.fakehw.records import NodeLayout, Problems
from nrirp.adapters.fakehw.spec import MachineSpec
from nrirp.domain.cpuset import CPUSet


def node_distances(
    spec: MachineSpec, nodes: list[NodeLayout], problems: Problems
) -> dict[int, dict[int, int]]:
    ids = [n.id for n in nodes]
    if spec.distances is not None:
        matrix = spec.distances
        if len(matrix) != len(ids) or any(len(row) != len(ids) for row in matrix):
            problems.add("$.distances", f"must be a {len(ids)}x{len(ids)} matrix (nodes {ids})")
            return {}
        for i, row in enumerate(matrix):
            for j, value in enumerate(row):
                ok = value == 10 if i == j else 10 < value <= 255
                if not ok:
                    want = "10 on the diagonal" if i == j else "in 11..255 off the diagonal"
                    problems.add(f"$.distances[{i}][{j}]", f"must be {want}, got {value}")
        result = {a: dict(zip(ids, matrix[i], strict=True)) for i, a in enumerate(ids)}
        cpu_ids = [n.id for n in nodes if n.cpus]
        for n in nodes:
            if n.cpus or not n.nearest:
                continue
            keys = {c: (result[c][n.id], result[n.id][c]) for c in cpu_ids}
            best = min(keys.values())
            closest = CPUSet.from_ids(c for c in cpu_ids if keys[c] == best)
            declared = CPUSet.from_ids(n.nearest)
            if closest != declared:
                problems.add(
                    "$.distances",
                    f"node {n.id} is declared nearest to {_nodes(declared)} but the matrix puts "
                    f"{_nodes(closest)} closest",
                )
        return result
    by_id = {n.id: n for n in nodes}

    def cpu_distance(a: NodeLayout, b: NodeLayout) -> int:
        if a.id == b.id:
            return 10
        if a.package != b.package:
            return 21
        return 11 if a.die == b.die else 12

    def anchors(n: NodeLayout) -> list[NodeLayout]:
        return [by_id[i] for i in n.nearest] if n.nearest else [n]

    def distance(a: NodeLayout, b: NodeLayout) -> int:
        if a.id == b.id:
            return 10
        base = min(cpu_distance(x, y) for x in anchors(a) for y in anchors(b))
        return min(base + a.nearest_distance - 10 + b.nearest_distance - 10, 255)

    return {a.id: {b.id: distance(a, b) for b in nodes} for a in nodes}


def _nodes(ids: CPUSet) -> str:
    return f"node {ids}" if len(ids) == 1 else f"nodes {ids}"
