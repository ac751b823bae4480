"""``TemplatePolicy`` spec (the base for new policies) and the empty spec of ``none``."""

from __future__ import annotations

import attrs

from nrirp.domain.config.keys import ref
from nrirp.domain.config.resources import ResourceConstraints


@attrs.frozen(kw_only=True)
class TemplatePolicySpec:
    """Spec of the ``template`` policy (kind ``TemplatePolicy``): only the resource limits."""

    available_resources: ResourceConstraints = attrs.field(
        factory=ResourceConstraints, metadata=ref("availableResources")
    )
    reserved_resources: ResourceConstraints = attrs.field(
        factory=ResourceConstraints, metadata=ref("reservedResources")
    )


@attrs.frozen
class NonePolicySpec:
    """Spec of the ``none`` policy: no fields (the common blocks still apply)."""
