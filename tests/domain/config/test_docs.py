"""docs/configuration.md documents every key of every config class, and its examples hold."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
import yaml

from nrirp.adapters.documents import load_policy_config
from nrirp.domain import config as cfg
from nrirp.domain.config import ConfigError
from nrirp.domain.config.keys import key_map

DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"

DOCUMENTED = [
    cfg.TopologyAwarePolicySpec,
    cfg.BalloonsPolicySpec,
    cfg.BalloonType,
    cfg.BalloonComponent,
    cfg.LoadClass,
    cfg.TemplatePolicySpec,
    cfg.ResourceConstraints,
    cfg.Expression,
    cfg.ContainerMatch,
    cfg.SchedulingClass,
    cfg.CPUClass,
    cfg.ControlConfig,
    cfg.CPUControlConfig,
    cfg.CPUControlClass,
    cfg.RDTConfig,
    cfg.RDTOptions,
    cfg.RDTFeatureOptions,
    cfg.RDTPartition,
    cfg.RDTClass,
    cfg.RDTKubernetesOptions,
    cfg.BlockIOConfig,
    cfg.DeviceParameters,
    cfg.LogConfig,
    cfg.KlogConfig,
    cfg.InstrumentationConfig,
    cfg.MetricsConfig,
    cfg.AgentConfig,
    cfg.PrivilegedAnnotationsConfig,
]


def _sections() -> dict[str, str]:
    text = DOC.read_text()
    parts = re.split(r"^### (\w+)\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _table_keys(section: str) -> list[str]:
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


@pytest.mark.parametrize("cls", DOCUMENTED, ids=lambda c: c.__name__)
def test_every_key_has_a_row(cls: type) -> None:
    section = _sections()[cls.__name__]
    assert _table_keys(section) == list(key_map(cls).values())


def test_every_config_class_is_documented() -> None:
    exported = {
        getattr(cfg, name)
        for name in cfg.__all__
        if isinstance(getattr(cfg, name), type)
        and attrs.has(getattr(cfg, name))
        and key_map(getattr(cfg, name))
    }
    value_types = {cfg.Quantity, cfg.Duration, cfg.CPUResource, cfg.Frequency, cfg.IOWeight}
    value_types |= {cfg.CacheShare, cfg.CacheAllocation, cfg.BandwidthAllocation}
    value_types |= {cfg.PolicyConfig, cfg.SpecRegistration}
    assert exported - value_types == set(DOCUMENTED)


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_examples_load() -> None:
    blocks = _yaml_blocks()
    examples = [b for b in blocks if "{...}" not in b]
    loaded = 0
    for block in examples:
        data = yaml.safe_load(block)
        kind = data.get("kind") if "apiVersion" in data else None
        if kind == "TopologyAwarePolicy" or (kind is None and "balloonTypes" not in data):
            policy = "topology-aware"
        else:
            policy = "balloons"
        if "colour" in block:
            continue  # the invalid example, checked below
        load_policy_config(policy, block)
        loaded += 1
    assert loaded >= 3


def test_docs_invalid_example_output() -> None:
    (invalid,) = [b for b in _yaml_blocks() if "colour" in b]
    outputs = re.findall(
        r"```\n(invalid balloons policy configuration .*?)```", DOC.read_text(), re.DOTALL
    )
    expected = outputs[-1]  # the output shown right after the invalid example
    with pytest.raises(ConfigError) as info:
        load_policy_config("balloons", invalid)
    assert str(info.value) == expected.rstrip("\n")


def test_docs_error_format_sample() -> None:
    sample = re.findall(
        r"```\n(invalid balloons policy configuration .*?)```", DOC.read_text(), re.DOTALL
    )[0]
    document = {
        "apiVersion": "config.nri/v1alpha1",
        "kind": "BalloonsPolicy",
        "spec": {
            "reservedResources": {"cpu": "750m"},
            "balloonTypes": [{"name": "a"}, {"name": "x", "minCPUs": "abc", "foo": 1}],
            "log": {"klog": {"v": -1}},
        },
    }
    with pytest.raises(ConfigError) as info:
        load_policy_config("balloons", document)
    assert str(info.value) == sample.rstrip("\n")
