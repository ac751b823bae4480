"""The built-in policies are registered lazily (issue 9 item 9: a daemon imports only the
policy it runs), and a configuration can be prepared ahead of a reconfigure, off the pipeline
(issue 9 item 2): the reconfigure then compiles nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.config import TemplatePolicySpec, TopologyAwarePolicySpec
from nrirp.domain.matching import GlobSet
from nrirp.domain.pipeline import DefaultConfigCodec
from nrirp.domain.policies import builtin_registry
from nrirp.domain.policies.template import TemplatePolicy
from nrirp.domain.policy import PolicyRegistry
from tests.domain.policies.balloons.support import make_rig as balloons_rig
from tests.domain.policies.topology_aware.support import make_rig as topology_rig


def test_creating_one_builtin_policy_imports_no_other() -> None:
    code = (
        "import sys\n"
        "from nrirp.domain.policies import builtin_registry\n"
        "registry = builtin_registry()\n"
        "assert registry.names() == ['balloons', 'none', 'template', 'topology-aware']\n"
        "registry.create('template')\n"
        "print(sorted(m for m in sys.modules if m.startswith('nrirp.domain.policies.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['nrirp.domain.policies.template']"


def test_every_lazy_builtin_agrees_with_its_class() -> None:
    registry = builtin_registry()
    for name in registry.names():
        entry = registry.entry(name)
        assert entry.policy_class.name == name  # loading checks name and spec class
        assert entry.description == entry.policy_class.description


def test_a_lazy_registration_that_does_not_match_its_class_is_refused_when_loaded() -> None:
    registry = PolicyRegistry()
    registry.register_lazy("tmpl", lambda: TemplatePolicy, config_type=TemplatePolicySpec)
    with pytest.raises(ValueError, match="registered lazily but its class TemplatePolicy is"):
        registry.create("tmpl")
    registry.register_lazy("template", lambda: TemplatePolicy, config_type=TopologyAwarePolicySpec)
    with pytest.raises(ValueError, match="with spec class TopologyAwarePolicySpec"):
        registry.create("template")


NAMESPACES = [f"team-{n:05d}" for n in range(5000)]


@pytest.mark.parametrize("policy", ["topology-aware", "balloons"])
def test_a_prepared_config_is_applied_without_compiling_anything(policy: str) -> None:
    rig = (topology_rig if policy == "topology-aware" else balloons_rig)("box-16")
    data = {
        "reservedResources": {"cpu": "750m"},
        "reservedPoolNamespaces": [*NAMESPACES, "infra-*"],
        "privilegedAnnotations": {"allowedNamespaces": ["kube-system"]},
    }
    config = load_policy_config(policy, data)
    codec = DefaultConfigCodec()
    builtin_registry().prepare(config)  # what the daemon's reload thread does
    document = codec.dump(config)
    built = GlobSet.builds
    assert rig.manager.reconfigure(config).applied
    assert GlobSet.builds == built
    assert codec.dump(config) is document  # dumped once per configuration
