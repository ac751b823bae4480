"""How the active configuration is written into and read back from the snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from nrirp.domain.config import PolicyConfig, load_policy_config, unstructure_policy_config


class ConfigCodec(Protocol):
    """Converts configurations to JSON-compatible documents and back."""

    def dump(self, config: PolicyConfig) -> Mapping[str, Any]: ...

    def load(self, policy: str, document: Mapping[str, Any]) -> PolicyConfig: ...


class DefaultConfigCodec:
    """The config package's own document form (the reference's key names)."""

    def dump(self, config: PolicyConfig) -> Mapping[str, Any]:
        return unstructure_policy_config(config)

    def load(self, policy: str, document: Mapping[str, Any]) -> PolicyConfig:
        return load_policy_config(policy, document)
