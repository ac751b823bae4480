"""Policy configurations from text: the one loader with the config budget, then the domain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrirp.adapters.documents.budget import CONFIG
from nrirp.adapters.documents.loader import UnreadableDocument, load_document
from nrirp.domain.config import ConfigError, ConfigProblem, PolicyConfig, PolicySpecs
from nrirp.domain.config import load_policy_config as load_policy_config_data
from nrirp.domain.config.errors import ROOT


def parse_config_document(policy: str, source: str | bytes) -> Any:
    """The data of a config document (YAML/JSON text, or UTF-8 bytes read from a file; at
    most :data:`~nrirp.adapters.documents.budget.CONFIG` ``.max_bytes``); raises
    :class:`ConfigError` with the problem at ``<document>``."""
    try:
        return load_document(source, CONFIG)
    except UnreadableDocument as err:
        raise ConfigError(
            [ConfigProblem(ROOT, str(err))], subject=f"{policy} policy configuration"
        ) from None


def load_policy_config(
    policy: str,
    source: str | bytes | Mapping[str, Any] | None,
    specs: PolicySpecs | None = None,
) -> PolicyConfig:
    """The config of ``policy`` from YAML/JSON text, UTF-8 bytes or parsed data (a bare spec
    or a ``config.nri/v1alpha1`` custom resource; see
    :func:`nrirp.domain.config.load_policy_config`), with the spec class and kind ``specs``
    (the composition's policy registry; default: the built-in policies) gives the policy.

    Raises :class:`ConfigError` listing the problems, and nothing else."""
    data = parse_config_document(policy, source) if isinstance(source, str | bytes) else source
    return load_policy_config_data(policy, data, specs)
