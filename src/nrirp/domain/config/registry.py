"""What config loading needs to know of each policy: its spec class and custom-resource kind.

There is no registry here: the policy registry (``nrirp.domain.policy.PolicyRegistry``) reads
each policy's spec class from the policy class when the policy is registered, and is handed to
the loading functions as :class:`PolicySpecs`. Without one they know the built-in policies.
"""

from __future__ import annotations

from functools import cache
from typing import Protocol

import attrs

from nrirp.domain.config.keys import key_map
from nrirp.domain.config.template import NonePolicySpec

COMMON_BLOCK_KEYS = ("control", "log", "instrumentation", "agent", "privilegedAnnotations")


@attrs.frozen
class SpecRegistration:
    """``policy`` is the policy name, ``kind`` the custom resource kind (``None``: the policy
    has no custom resource), ``spec_class`` the attrs class its spec structures into."""

    policy: str
    kind: str | None
    spec_class: type

    @classmethod
    def checked(cls, policy: str, kind: str | None, spec_class: type | None) -> SpecRegistration:
        """The registration of ``policy``'s spec, refused (``ValueError``, ``TypeError``) when
        the name is empty or the spec class is not an attrs class or uses a common block's key.
        A policy without a spec class (``None``) takes the empty spec: only the common blocks."""
        if not policy:
            raise ValueError("a policy name is required")
        if spec_class is None:
            spec_class = NonePolicySpec
        if not attrs.has(spec_class):
            raise TypeError(f"spec class {spec_class!r} of policy {policy!r} is not an attrs class")
        clashes = sorted(set(key_map(spec_class).values()) & set(COMMON_BLOCK_KEYS))
        if clashes:
            raise ValueError(
                f"spec class {spec_class.__name__} of policy {policy!r} uses keys reserved"
                f" for the common blocks: {', '.join(clashes)}"
            )
        return cls(policy, kind, spec_class)


class PolicySpecs(Protocol):
    """The spec registrations of the policies one composition knows (its policy registry)."""

    def spec_registration(self, policy: str) -> SpecRegistration | None:
        """The registration of ``policy``'s spec; ``None`` for an unknown policy."""
        ...

    def names(self) -> list[str]:
        """The known policy names, sorted."""
        ...


@cache
def builtin_specs() -> PolicySpecs:
    """The built-in policies' specs: what the loading functions use when given none."""
    # the policies import this package, so their registry is imported when first needed
    from nrirp.domain.policies import builtin_registry

    return builtin_registry()
