"""Policies by name."""

from __future__ import annotations

from collections.abc import Callable

from nrirp.domain.policy.port import Policy

PolicyFactory = Callable[[], Policy]


class UnknownPolicyError(LookupError):
    """No policy is registered under the name (the message lists the known ones)."""


class PolicyRegistry:
    """Maps policy names to factories creating fresh policy instances."""

    def __init__(self) -> None:
        self._factories: dict[str, tuple[PolicyFactory, str]] = {}

    def register(self, name: str, factory: PolicyFactory, description: str = "") -> None:
        if name in self._factories:
            raise ValueError(f"policy {name!r} is already registered")
        self._factories[name] = (factory, description)

    def names(self) -> list[str]:
        return sorted(self._factories)

    def describe(self) -> dict[str, str]:
        return {name: self._factories[name][1] for name in self.names()}

    def create(self, name: str) -> Policy:
        entry = self._factories.get(name)
        if entry is None:
            known = ", ".join(self.names()) or "none"
            raise UnknownPolicyError(f"unknown policy {name!r} (known: {known})")
        return entry[0]()

    def __contains__(self, name: object) -> bool:
        return name in self._factories
