"""Policies by name: one registration per policy, read from its class."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from nrirp.domain.config import SpecRegistration
from nrirp.domain.policy.port import Policy

PolicyFactory = Callable[[], Policy]


class UnknownPolicyError(LookupError):
    """No policy is registered under the name (the message lists the known ones)."""


@attrs.frozen
class PolicyEntry:
    """A registered policy: how to create it, what it does, how it is configured."""

    factory: PolicyFactory
    description: str
    spec: SpecRegistration


class PolicyRegistry:
    """The policies one composition knows: name -> a factory of fresh instances, the
    description and the configuration's spec class and custom-resource kind.

    It is an instance handed around (each composition has its own), never module state. Config
    loading reads the specs from it (it is a :class:`~nrirp.domain.config.PolicySpecs`).
    """

    def __init__(self) -> None:
        self._entries: dict[str, PolicyEntry] = {}

    def register(
        self,
        policy: type[Policy],
        *,
        kind: str | None = None,
        factory: PolicyFactory | None = None,
    ) -> None:
        """Register ``policy``: its ``name``, ``description`` and ``config_type`` (the spec
        class, ``None``: only the common blocks) come from the class; ``kind`` is the custom
        resource kind of its config documents (``None``: bare specs only); instances are
        made by ``factory`` (default: the class itself, without arguments).

        Raises ``ValueError`` for a taken name or kind, an empty name or a spec class using a
        common block's key, ``TypeError`` for a spec class that is not an attrs class."""
        name = policy.name
        spec = SpecRegistration.checked(name, kind, policy.config_type)
        if name in self._entries:
            raise ValueError(f"policy {name!r} is already registered")
        for other in self._entries.values():
            if kind is not None and other.spec.kind == kind:
                raise ValueError(
                    f"kind {kind!r} is already registered for policy {other.spec.policy!r}"
                )
        self._entries[name] = PolicyEntry(factory or policy, policy.description, spec)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self) -> dict[str, str]:
        return {name: self._entries[name].description for name in self.names()}

    def create(self, name: str) -> Policy:
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(self.names()) or "none"
            raise UnknownPolicyError(f"unknown policy {name!r} (known: {known})")
        return entry.factory()

    def spec_registration(self, policy: str) -> SpecRegistration | None:
        """The spec class and custom-resource kind of ``policy`` (``None``: unknown)."""
        entry = self._entries.get(policy)
        return None if entry is None else entry.spec

    def __contains__(self, name: object) -> bool:
        return name in self._entries
