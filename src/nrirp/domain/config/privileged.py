"""The ``privilegedAnnotations`` block: where pods may take CPUs or memory out of the policy's
hands with an annotation (our extension; the reference allows it everywhere).

``prefer-reserved-cpus: true`` (topology-aware; in balloons the ``balloon`` annotation naming
the ``reserved`` type) runs a container on the CPUs kept for the system, and
``cpu.preserve``/``memory.preserve: true`` make the policy leave a container's CPUs or memory
as the runtime set them (no pinning, no accounting). Any pod author can write them, so on a
shared cluster an operator can restrict them to the namespaces listed here; in other
namespaces they are ignored and the reason is reported.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from nrirp.domain.config.errors import Issue
from nrirp.domain.config.keys import ref
from nrirp.domain.config.policy_checks import check_names_listed

PRIVILEGED_ANNOTATIONS_KEY = "privilegedAnnotations"


@attrs.frozen(kw_only=True)
class PrivilegedAnnotationsConfig:
    """``allowedNamespaces``: namespace globs (Go ``filepath.Match``, as ``reservedPoolNamespaces``)
    whose pods may use the privileged annotations; ``None`` (the default, the key left out):
    every namespace, as in the reference; ``[]``: none."""

    allowed_namespaces: tuple[str, ...] | None = attrs.field(
        default=None, metadata=ref("allowedNamespaces")
    )

    @property
    def restricted(self) -> bool:
        return self.allowed_namespaces is not None

    def config_problems(self) -> Iterator[Issue]:
        yield from check_names_listed(self, "allowed_namespaces", self.allowed_namespaces or ())
