"""``load_policy_config``: parsed data in, one complete valid :class:`PolicyConfig` out, or one
:class:`ConfigError` listing the problems. Pure: text is read and parsed by the documents
adapter (``nrirp.adapters.documents.load_policy_config`` takes text too)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from nrirp.domain.config.agent import AgentConfig
from nrirp.domain.config.control import ControlConfig
from nrirp.domain.config.converter import structure, unstructure
from nrirp.domain.config.document import API_VERSION, is_custom_resource, unwrap_custom_resource
from nrirp.domain.config.errors import ROOT, ConfigError, ConfigProblem, Issue, Path, format_path
from nrirp.domain.config.instrumentation import InstrumentationConfig
from nrirp.domain.config.log import LogConfig
from nrirp.domain.config.privileged import PrivilegedAnnotationsConfig
from nrirp.domain.config.registry import (
    COMMON_BLOCK_KEYS,
    PolicySpecs,
    SpecRegistration,
    builtin_specs,
)
from nrirp.domain.ports.documents import clip

_COMMON_BLOCKS: dict[str, type] = {
    "control": ControlConfig,
    "log": LogConfig,
    "instrumentation": InstrumentationConfig,
    "agent": AgentConfig,
    "privilegedAnnotations": PrivilegedAnnotationsConfig,
}
assert tuple(_COMMON_BLOCKS) == COMMON_BLOCK_KEYS
COMMON_BLOCK_TYPES: Mapping[str, type] = MappingProxyType(_COMMON_BLOCKS)
"""Each common block's key and class (in documents: keys of the spec, beside its own)."""
_ATTRIBUTES = {"privilegedAnnotations": "privileged_annotations"}
"""Common blocks whose attribute of :class:`PolicyConfig` is not their key."""
_DUMPED_WHEN_SET = frozenset({"privilegedAnnotations"})
"""Our own blocks (not the reference's): dumped only when they differ from the default, so
that a config without them dumps as the reference's would."""


@attrs.frozen(kw_only=True)
class PolicyConfig:
    """A complete, valid configuration of one policy: its typed ``spec`` and the common blocks
    (which live inside the spec in documents, as in the reference's custom resources).

    ``spec`` is an instance of the spec class of ``policy`` (its ``config_type``:
    :class:`TopologyAwarePolicySpec`, :class:`BalloonsPolicySpec`, ...)."""

    policy: str
    spec: Any
    control: ControlConfig = attrs.field(factory=ControlConfig)
    log: LogConfig = attrs.field(factory=LogConfig)
    instrumentation: InstrumentationConfig = attrs.field(factory=InstrumentationConfig)
    agent: AgentConfig = attrs.field(factory=AgentConfig)
    privileged_annotations: PrivilegedAnnotationsConfig = attrs.field(
        factory=PrivilegedAnnotationsConfig
    )


def _problems(issues: list[Issue]) -> list[ConfigProblem]:
    return [ConfigProblem(format_path(path), message) for path, message in issues]


def _fail(policy: str, issues: list[Issue]) -> ConfigError:
    return ConfigError(_problems(issues), subject=f"{policy} policy configuration")


def _in_document_order(issues: list[Issue], spec: Mapping[Any, Any], prefix: Path) -> list[Issue]:
    """Sort issues by where their top-level key appears in the spec (stable otherwise)."""
    order = {key: index for index, key in enumerate(spec)}
    depth = len(prefix)

    def position(issue: Issue) -> int:
        path = issue[0]
        if path[:depth] != prefix or len(path) <= depth:
            return -1
        return order.get(path[depth], len(order))

    return sorted(issues, key=position)


def load_policy_config(policy: str, data: object, specs: PolicySpecs | None = None) -> PolicyConfig:
    """Load the config of ``policy`` from parsed data (``None`` is an empty spec): the bare
    spec or a whole ``config.nri/v1alpha1`` custom-resource document, as a mapping.
    ``specs`` (the composition's policy registry; default: the built-in policies) gives the
    policy's spec class and custom-resource kind.

    Raises :class:`ConfigError` listing the problems (path and bad value), and nothing else:
    an unexpected failure is reported as one problem naming its exception type. Never
    returns a partial config."""
    specs = builtin_specs() if specs is None else specs
    registration = specs.spec_registration(policy)
    if registration is None:
        known = ", ".join(repr(p) for p in specs.names())
        raise ConfigError(
            [ConfigProblem(ROOT, f"unknown policy {policy!r} (known: {known})")],
            subject="policy configuration",
        )
    try:
        return _load(policy, registration, data)
    except ConfigError:
        raise
    except Exception as exc:  # a bug, or data no document gives: still the one error class
        reason = f"cannot load it ({type(exc).__name__}: {clip(str(exc))})"
        raise _fail(policy, [((), reason)]) from None


def _load(policy: str, registration: SpecRegistration, data: object) -> PolicyConfig:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _fail(policy, [((), f"expected a mapping, got {type(data).__name__}")])

    issues: list[Issue] = []
    prefix: Path = ()
    spec_data: Any = data
    if is_custom_resource(data):
        spec_data, prefix, issues = unwrap_custom_resource(data, registration.kind, policy)
        if registration.kind is None:
            raise _fail(policy, issues)
    if not isinstance(spec_data, Mapping):
        raise _fail(policy, [*issues, (prefix, "expected a mapping")])

    common_data = {k: v for k, v in spec_data.items() if k in _COMMON_BLOCKS}
    own_data = {k: v for k, v in spec_data.items() if k not in _COMMON_BLOCKS}
    spec, spec_issues = structure(own_data, registration.spec_class)
    issues += [((*prefix, *path), message) for path, message in spec_issues]
    blocks: dict[str, Any] = {}
    for key, block_class in _COMMON_BLOCKS.items():
        raw = common_data.get(key)
        block, block_issues = structure({} if raw is None else raw, block_class)
        blocks[_ATTRIBUTES.get(key, key)] = block
        issues += [((*prefix, key, *path), message) for path, message in block_issues]
    cross_check = getattr(spec, "cross_check", None)
    if spec is not None and blocks["control"] is not None and cross_check is not None:
        issues += [((*prefix, *path), message) for path, message in cross_check(blocks["control"])]
    if issues:
        raise _fail(policy, _in_document_order(issues, spec_data, prefix))
    return PolicyConfig(policy=policy, spec=spec, **blocks)


def unstructure_policy_config(
    config: PolicyConfig,
    *,
    as_document: bool = False,
    name: str = "default",
    specs: PolicySpecs | None = None,
) -> dict[str, Any]:
    """The config as plain data with the reference's key names: the bare spec (common blocks
    inside it), or with ``as_document`` a whole custom resource named ``name`` (its kind from
    ``specs``, default: the built-in policies).
    ``load_policy_config(config.policy, unstructure_policy_config(config)) == config``."""
    spec: dict[str, Any] = unstructure(config.spec, type(config.spec))
    for key, block_class in _COMMON_BLOCKS.items():
        block = getattr(config, _ATTRIBUTES.get(key, key))
        if key not in _DUMPED_WHEN_SET or block != block_class():
            spec[key] = unstructure(block)
    if not as_document:
        return spec
    registration = (builtin_specs() if specs is None else specs).spec_registration(config.policy)
    if registration is None or registration.kind is None:
        raise ValueError(f"policy {config.policy!r} has no custom resource kind")
    return {
        "apiVersion": API_VERSION,
        "kind": registration.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


dump_policy_config = unstructure_policy_config
"""Alias of :func:`unstructure_policy_config`."""
