"""The e2e scenarios again, on a real containerd 2.x (Debian forky's; NRI 0.8 on the runtime
side, where containerd 1.7.24 has NRI 0.6.1): our example plugins' lives, ``nrirp run`` with
each policy (registration, placements in the cgroups, moves, persistence across a SIGKILL,
reconfiguration, the runtime restarting under it).

The tests are the ones of the 1.7 modules, collected here a second time: pytest resolves their
fixtures from this module, whose ``containerd_factory`` makes :class:`Containerd2` instances,
so ``containerd``, ``fresh_containerd``, ``make_containerd`` and the kubelets built on them are
containerd 2 ones. Where the two runtimes differ the tests ask :func:`runtime_facts`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import CriApi, ImageArchive, RuntimeBinaries
from .harness.containerd2 import Containerd2, fetch_containerd2
from .harness.fixtures import ContainerdFactory
from .harness.packages import HarnessSetupError
from .test_balloons import (  # noqa: F401  (collected again here)
    test_balloon_inflates_and_deflates,
    test_containers_get_their_balloons_cpusets,
    test_containers_move_on_reconfiguration,
    test_restart_keeps_every_balloon,
)
from .test_containerd_cri import (  # noqa: F401
    test_exec_and_cri_errors,
    test_pod_with_two_containers,
    test_qos_classes_set_pod_cgroup_and_oom_score,
    test_stop_and_remove_single_container,
    test_update_container_resources,
)
from .test_daemon import (  # noqa: F401
    sysfs_tree,
    test_config_errors_and_sighup_reload,
    test_pinning_policy_adjusts_refuses_and_reconciles,
    test_prelaunched_daemon_registers_over_fd_3,
    test_template_daemon_lifecycle_persistence_and_restart,
)
from .test_daemon_reconnect import (  # noqa: F401
    test_daemon_registers_again_within_a_second_of_each_containerd_restart,
)
from .test_deployment import (  # noqa: F401
    host_dirs,
    image_archive,
    test_the_daemonset_pod_serves_its_node,
)
from .test_host_control import (  # noqa: F401
    test_scheduling_classes_reach_the_tasks_when_nri_cannot_carry_them,
)
from .test_lifecycle import (  # noqa: F401
    test_restart_keeps_pods_and_serves_nri_again,
    test_teardown_after_runtime_crash,
    test_teardown_removes_running_pods_mounts_and_cgroups,
)
from .test_node_agent import (  # noqa: F401
    apiserver,
    test_configuration_status_and_topology_from_the_cluster,
)
from .test_nri_go_plugin import (  # noqa: F401
    test_external_go_plugin_adjusts_cpuset,
    test_prelaunched_plugin_that_never_registers_times_out,
    test_prelaunched_python_wrapper_runs_a_plugin,
)
from .test_python_plugins import (  # noqa: F401
    test_logger_registers_and_sees_a_two_container_pod_in_order,
    test_pin_cpus_annotations_set_cpus_and_mems_of_new_containers,
    test_pin_cpus_mems_reach_the_container_cgroup,
    test_pin_cpus_refuses_a_container_with_an_invalid_annotation,
    test_pin_cpus_repins_running_containers_by_unsolicited_update,
    test_plugins_reconnect_and_resync_after_containerd_restart,
    test_plugins_started_while_pods_run_get_them_in_synchronize,
    test_prelaunched_logger_gets_its_config_and_sees_events,
    test_prelaunched_pin_cpus_pins_and_repins_containers,
)
from .test_recording import (  # noqa: F401
    test_a_recording_of_a_real_runtime_replays_to_the_daemon_s_placements,
)
from .test_topology_aware import (  # noqa: F401
    test_fake_machine_isolated_cpu_goes_to_a_guaranteed_container,
    test_fake_two_socket_machine_places_and_moves,
    test_reserved_and_shared_cpus_on_this_machine,
    test_restart_keeps_allocations_and_admits_consistently,
    test_shared_container_moves_when_exclusive_arrives_and_leaves,
    two_socket,
    two_socket_isolated,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def containerd2_binaries(runtime_binaries: RuntimeBinaries) -> RuntimeBinaries:
    """Debian forky's containerd 2.x with the 1.7 suite's runc, busybox and CRI proto."""
    try:
        return fetch_containerd2(runtime_binaries)
    except HarnessSetupError as exc:
        pytest.fail(f"e2e harness: containerd 2: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def containerd_factory(
    containerd2_binaries: RuntimeBinaries,
    cri_api: CriApi,
    busybox_image: ImageArchive,
    e2e_logs_dir: Path,
) -> Iterator[ContainerdFactory]:
    """Makes containerd 2 instances for every test of this module."""
    factory = ContainerdFactory(
        containerd2_binaries, cri_api, busybox_image, e2e_logs_dir / "containerd2", Containerd2
    )
    yield factory
    problems = factory.destroy_all()
    assert not problems, f"containerd 2 teardown left: {problems}"


def test_containerd2_runs_private_with_nri(
    containerd2_binaries: RuntimeBinaries, containerd: Containerd2
) -> None:
    """The instance is the containerd 2 the module asked for, configured without migration."""
    assert isinstance(containerd, Containerd2)
    version = containerd.runtime().Version(containerd.cri.pb.VersionRequest(), timeout=5)
    assert version.runtime_version.startswith(containerd2_binaries.containerd_version)
    assert version.runtime_version.startswith("2.")
    log = containerd.log_text()
    assert "Configuration migrated" not in log
    assert "created NRI interface" in log
    assert containerd.nri_socket.is_socket()
