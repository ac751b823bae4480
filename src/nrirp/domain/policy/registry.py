"""Policies by name: one registration per policy, read from its class.

A policy is registered with its class (``register``), or by name with a function importing
the class when it is first needed (``register_lazy``, what the built-ins use: a daemon running
one policy never imports the others' modules, which keeps its start short).
"""

from __future__ import annotations

from collections.abc import Callable

from nrirp.domain.config import PolicyConfig, SpecRegistration
from nrirp.domain.policy.port import Policy

PolicyFactory = Callable[[], Policy]
PolicyLoader = Callable[[], type[Policy]]


class UnknownPolicyError(LookupError):
    """No policy is registered under the name (the message lists the known ones)."""


class PolicyEntry:
    """A registered policy: how to create it, what it does, how it is configured.

    ``spec`` is known at registration; the class (and with it ``description``) is imported
    on first use when the policy was registered lazily."""

    __slots__ = ("_factory", "_load", "_policy", "spec")

    def __init__(
        self,
        spec: SpecRegistration,
        *,
        policy: type[Policy] | None = None,
        load: PolicyLoader | None = None,
        factory: PolicyFactory | None = None,
    ) -> None:
        self.spec = spec
        self._policy = policy
        self._load = load
        self._factory = factory

    @property
    def policy_class(self) -> type[Policy]:
        """The policy's class (imported now if it was registered lazily)."""
        if self._policy is None:
            assert self._load is not None
            loaded = self._load()
            if loaded.name != self.spec.policy:
                raise ValueError(
                    f"policy {self.spec.policy!r} was registered lazily but its class "
                    f"{loaded.__name__} is named {loaded.name!r}"
                )
            declared = SpecRegistration.checked(loaded.name, self.spec.kind, loaded.config_type)
            if declared != self.spec:
                raise ValueError(
                    f"policy {self.spec.policy!r} was registered lazily with spec class "
                    f"{self.spec.spec_class.__name__}, its class takes "
                    f"{declared.spec_class.__name__}"
                )
            self._policy = loaded
        return self._policy

    @property
    def loaded(self) -> bool:
        return self._policy is not None

    @property
    def description(self) -> str:
        return self.policy_class.description

    def create(self) -> Policy:
        return self._factory() if self._factory is not None else self.policy_class()

    def prepare(self, config: PolicyConfig) -> None:
        """Let the policy compile what it derives from ``config`` ahead of a reconfigure
        (its optional ``prepare_config(config)``: pure, callable on any thread)."""
        prepare: Callable[[PolicyConfig], None] | None = getattr(
            self.policy_class, "prepare_config", None
        )
        if prepare is not None:
            prepare(config)


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
        spec = SpecRegistration.checked(policy.name, kind, policy.config_type)
        self._add(PolicyEntry(spec, policy=policy, factory=factory))

    def register_lazy(
        self,
        name: str,
        load: PolicyLoader,
        *,
        kind: str | None = None,
        config_type: type | None = None,
    ) -> None:
        """Register the policy ``name`` whose class ``load()`` imports when it is first needed
        (created, described or asked to prepare a config). ``kind`` and ``config_type`` are
        what its class says; that it does is checked when it is loaded."""
        self._add(PolicyEntry(SpecRegistration.checked(name, kind, config_type), load=load))

    def _add(self, entry: PolicyEntry) -> None:
        name, kind = entry.spec.policy, entry.spec.kind
        if name in self._entries:
            raise ValueError(f"policy {name!r} is already registered")
        for other in self._entries.values():
            if kind is not None and other.spec.kind == kind:
                raise ValueError(
                    f"kind {kind!r} is already registered for policy {other.spec.policy!r}"
                )
        self._entries[name] = entry

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self) -> dict[str, str]:
        return {name: self._entries[name].description for name in self.names()}

    def entry(self, name: str) -> PolicyEntry:
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(self.names()) or "none"
            raise UnknownPolicyError(f"unknown policy {name!r} (known: {known})")
        return entry

    def create(self, name: str) -> Policy:
        return self.entry(name).create()

    def prepare(self, config: PolicyConfig) -> None:
        """Compile what ``config``'s policy derives from it, off the pipeline (any thread):
        a reconfigure with it then finds it done. Unknown policies are left to fail there."""
        entry = self._entries.get(config.policy)
        if entry is not None:
            entry.prepare(config)

    def spec_registration(self, policy: str) -> SpecRegistration | None:
        """The spec class and custom-resource kind of ``policy`` (``None``: unknown)."""
        entry = self._entries.get(policy)
        return None if entry is None else entry.spec

    def __contains__(self, name: object) -> bool:
        return name in self._entries
