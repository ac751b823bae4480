"""A test kit for policies and embeddings: ``from nrirp.testing import ...``
(``docs/policy-authoring.md`` walks through it).

- Pods and containers from Kubernetes-style resources: :func:`pod`, :func:`container`,
  :func:`guaranteed`, :func:`burstable`, :func:`besteffort` (kubelet's arithmetic does the
  rest: QoS class, shares, quota, memory limit, OOM score, cgroup paths); a container's device
  nodes (:class:`DeviceSpec`) and volumes (:class:`MountSpec`), for topology hints.
- Fake machines by catalogue name: :func:`fake_machine`.
- An engine on a fake machine with recording adapters, walking pods through their
  lifecycle: :class:`EngineHarness` (``EngineHarness.build("topology-aware",
  machine="server-4s-144")``); the same walk on any engine: :func:`run_pod`,
  :func:`resize_container`, :func:`delete_pod`.
- Assertions: :func:`assert_exclusive`, :func:`assert_on_one_node`, :func:`assert_disjoint`,
  :func:`assert_within_pool`.
- A pytest plugin (installed with the package, no ``conftest.py`` needed) with the fixtures
  ``nrirp_engine`` (a factory of started harnesses, closed after the test),
  ``nrirp_machine`` (machines by name) and ``nrirp_kit`` (this module).
"""

from nrirp.domain.model.pod_spec import DeviceSpec, MountSpec
from nrirp.testing.assertions import (
    assert_disjoint,
    assert_exclusive,
    assert_on_one_node,
    assert_within_pool,
    placement_from,
)
from nrirp.testing.builders import (
    PodUnderTest,
    besteffort,
    burstable,
    container,
    guaranteed,
    pod,
)
from nrirp.testing.engines import (
    ContainerRef,
    EngineHarness,
    RunningPod,
    delete_pod,
    resize_container,
    run_pod,
)
from nrirp.testing.machines import fake_machine, machine_names

__all__ = [
    "ContainerRef",
    "DeviceSpec",
    "EngineHarness",
    "MountSpec",
    "PodUnderTest",
    "RunningPod",
    "assert_disjoint",
    "assert_exclusive",
    "assert_on_one_node",
    "assert_within_pool",
    "besteffort",
    "burstable",
    "container",
    "delete_pod",
    "fake_machine",
    "guaranteed",
    "machine_names",
    "placement_from",
    "pod",
    "resize_container",
    "run_pod",
]
