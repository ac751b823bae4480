"""The input budget: what reading one document of each kind may cost (docs/security.md).

Every untrusted text goes through :func:`~nrirp.adapters.documents.loader.load_document` with
the budget of its kind; nothing else in the project parses YAML.
"""

from __future__ import annotations

import attrs

KiB = 1 << 10
MiB = 1 << 20


@attrs.frozen
class Budget:
    """Limits for one kind of document.

    ``max_bytes``: the UTF-8 size of the text; ``max_depth``: nesting of lists and mappings
    (a scalar at the top is depth 0); ``max_nodes``: lists, mappings and scalars, counted
    after aliases are expanded; ``references``: whether YAML anchors, aliases and explicit
    tags are accepted at all (refused ones are found before anything is built).
    """

    kind: str
    max_bytes: int
    max_depth: int
    max_nodes: int
    references: bool = True


ANNOTATION = Budget("annotation value", 8 * KiB, 16, 4096, references=False)
"""Pod annotations: written by any pod author, parsed on the pipeline."""

CONFIG = Budget("policy configuration", 1 * MiB, 32, 1_000_000)
"""The policy configuration: a file the operator installs, or data a host agent hands over."""

MACHINE_SPEC = Budget("machine spec", 1 * MiB, 32, 1_000_000)
"""Fake-machine specs (``nrirp simulate``, ``nrirp hardware``, tests)."""

WORKLOAD = Budget("workload", 4 * MiB, 32, 1_000_000)
"""Simulator workloads: the steps of a replay, configs included."""

BUDGETS = (ANNOTATION, CONFIG, MACHINE_SPEC, WORKLOAD)
