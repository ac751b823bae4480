"""How the active configuration is written into and read back from the snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from nrirp.domain.config import (
    PolicyConfig,
    PolicySpecs,
    load_policy_config,
    unstructure_policy_config,
)
from nrirp.domain.config.derived import PerConfig


class ConfigCodec(Protocol):
    """Converts configurations to JSON-compatible documents and back."""

    def dump(self, config: PolicyConfig) -> Mapping[str, Any]: ...

    def load(self, policy: str, document: Mapping[str, Any]) -> PolicyConfig: ...


class DefaultConfigCodec:
    """The config package's own document form (the reference's key names), loaded with the
    spec classes of ``specs`` (the composition's policy registry; default: the built-ins)."""

    def __init__(self, specs: PolicySpecs | None = None) -> None:
        self._specs = specs
        self._dump = PerConfig(unstructure_policy_config)

    def dump(self, config: PolicyConfig) -> Mapping[str, Any]:
        """The document form of ``config``, made once per configuration (a dump made ahead,
        off the pipeline, is the one the reconfigure saves). Callers must not modify it."""
        return self._dump(config)

    def load(self, policy: str, document: Mapping[str, Any]) -> PolicyConfig:
        return load_policy_config(policy, document, self._specs)
