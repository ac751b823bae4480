"""The test kit (``nrirp.testing``): builders agree with kubelet's arithmetic, the harness
walks the lifecycle, the assertions catch what they claim to, and the pytest plugin's
fixtures are there without a conftest."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from nrirp.app.embed import KubernetesPod, OperationFailedError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Device, Mount, QOSClass
from nrirp.domain.topology import Machine
from nrirp.testing import (
    DeviceSpec,
    EngineHarness,
    MountSpec,
    assert_disjoint,
    assert_exclusive,
    assert_on_one_node,
    assert_within_pool,
    besteffort,
    burstable,
    container,
    delete_pod,
    fake_machine,
    guaranteed,
    pod,
    resize_container,
)

ROOT = Path(__file__).parents[2]
EXCLUSIVE = str(ROOT / "examples" / "policies" / "exclusive_cpus.py")


# ---------------------------------------------------------------------- builders
def test_builders_derive_qos_and_kubelet_settings_from_requests_and_limits() -> None:
    web = pod("web", guaranteed("app", "2", "1Gi"), burstable("log", "100m", "32Mi"))
    assert web.qos is QOSClass.BURSTABLE
    assert pod("db", guaranteed("pg", 4, "2Gi")).qos is QOSClass.GUARANTEED
    assert pod("batch", besteffort("x")).qos is QOSClass.BESTEFFORT
    app = web.container("app", memory_capacity=16 << 30)
    assert (app.resources.cpu_shares, app.resources.cpu_quota, app.resources.cpu_period) == (
        2048,
        200_000,
        100_000,
    )
    assert app.resources.memory_limit == 1 << 30
    assert app.pod_id == web.id == web.sandbox.id and app.id == web.container_id("app")
    log = web.container("log", memory_capacity=16 << 30)
    assert log.resources.cpu_shares == 102 and log.resources.cpu_quota is None
    # the same pod written as a manifest gives the same neutral values
    manifest = {
        "metadata": {"name": "web", "namespace": "default", "uid": web.kube.spec.uid},
        "spec": {
            "containers": [
                {"name": "app", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
                {"name": "log", "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}}},
            ]
        },
    }
    kube = KubernetesPod.from_manifest(manifest)
    assert kube.sandbox(web.id) == web.sandbox
    assert kube.container("log", log.id, pod_id=web.id, memory_capacity=16 << 30) == log


def test_builders_give_the_container_its_devices_and_mounts() -> None:
    gpu = DeviceSpec("/dev/dri/card0", "c", 226, 0)
    data = MountSpec("/data", "/mnt/nvme0/data")
    built = pod(
        "ml",
        guaranteed("train", 2, "1Gi", devices=[gpu], mounts=[data]),
        burstable("log", "100m", mounts=[MountSpec("/logs", "/var/log/ml", ("rbind", "ro"))]),
        besteffort("idle"),
    )
    train = built.container("train", memory_capacity=16 << 30)
    assert train.devices == (Device("/dev/dri/card0", "c", 226, 0),)
    assert train.mounts == (Mount("/data", "/mnt/nvme0/data", "bind", ("rbind", "rprivate", "rw")),)
    log = built.container("log", memory_capacity=16 << 30)
    assert (log.devices, log.mounts) == (
        (),
        (Mount("/logs", "/var/log/ml", "bind", ("rbind", "ro")),),
    )
    idle = built.container("idle", memory_capacity=16 << 30)
    assert (idle.devices, idle.mounts) == ((), ())


def test_builders_are_deterministic_and_check_their_input() -> None:
    assert pod("a", besteffort("c")).sandbox == pod("a", besteffort("c")).sandbox
    assert pod("a", besteffort("c")).id != pod("a", besteffort("c"), namespace="x").id
    with pytest.raises(
        ValueError, match=r"^requests\.cpu 2 \(2000m\) exceeds limits\.cpu 1 \(1000m\)$"
    ):
        container("c", requests={"cpu": "2"}, limits={"cpu": "1"})
    with pytest.raises(ValueError, match="at least one container"):
        pod("empty")
    with pytest.raises(KeyError, match="no container 'zz'"):
        pod("a", besteffort("c")).container_id("zz")


def test_container_annotations_become_the_pods_per_container_annotations() -> None:
    web = pod(
        "web",
        besteffort("app", annotations={"cpu.preserve.resource-policy.nri.io": "true"}),
        annotations={"team": "shop"},
    )
    assert dict(web.sandbox.annotations) == {
        "team": "shop",
        "cpu.preserve.resource-policy.nri.io/container.app": "true",
    }


def test_init_containers_count_for_the_qos_class() -> None:
    mixed = pod("m", guaranteed("app", 1, "1Gi"), init_containers=[besteffort("setup")])
    assert mixed.qos is QOSClass.BURSTABLE and mixed.init_container_names == ("setup",)


def test_fake_machines_by_name_are_built_once() -> None:
    assert fake_machine("box-16") is fake_machine("box-16")
    assert str(fake_machine("server-4s-144").online) == "0-143"


# ---------------------------------------------------------------------- the harness
def test_a_device_given_to_a_builder_reaches_the_policys_topology_hints() -> None:
    # server-4s-144's spec has a GPU (/dev/dri/card0) on socket 2, NUMA node 2
    machine = fake_machine("server-4s-144")
    engine = EngineHarness.build("topology-aware", machine="server-4s-144")
    try:
        gpu = DeviceSpec("/dev/dri/card0", "c", 226, 0)
        running = engine.run(pod("ml", guaranteed("train", 2, "1Gi", devices=[gpu])))
        cpus = engine.cpus(running["train"])
        assert cpus is not None and len(cpus) == 2
        assert cpus.issubset(machine.node_cpus(2))
    finally:
        engine.close()


def test_the_harness_walks_the_lifecycle_and_records_everything() -> None:
    harness = EngineHarness.build("exclusive-cpus", policy_modules=[EXCLUSIVE])
    web = harness.run(pod("web", burstable("nginx", "500m", "256Mi"), namespace="shop"))
    db = harness.run(pod("db", guaranteed("postgres", 4, "2Gi"), namespace="shop"))
    assert harness.cpus(db["postgres"]) == CPUSet.parse("0-3")
    assert harness.cpus("shop/web/nginx") == CPUSet.parse("4-15")
    assert db.results["postgres"].updates  # the shared container moved in the same reply
    assert [d.container for d in harness.decisions.decisions] == ["nginx", "postgres", "nginx"]
    moved = harness.delete(db.pod)  # StopContainer's reply carries the update for nginx
    assert [(u.container_id, str(u.resources.cpus)) for u in moved] == [(web["nginx"].id, "0-15")]
    assert harness.updates.updates == []  # nothing went out of band
    assert harness.cpus(web["nginx"]) == CPUSet.parse("0-15")
    with pytest.raises(KeyError, match="holds no container"):
        harness.container(db["postgres"])


def test_refusals_raise_or_are_recorded() -> None:
    harness = EngineHarness.build("exclusive-cpus", policy_modules=[EXCLUSIVE])
    huge = pod("huge", guaranteed("crunch", 16, "1Gi"))
    with pytest.raises(OperationFailedError, match="cannot give crunch 16 exclusive CPUs"):
        harness.run(huge)
    again = pod("again", guaranteed("crunch", 16, "1Gi"), guaranteed("small", 1, "1Gi"))
    running = harness.run(again, refusals=True)
    assert "cannot give crunch" in running.refused["crunch"]
    assert list(running.containers) == ["small"]
    with pytest.raises(KeyError, match="refused: cannot give crunch"):
        running["crunch"]


def test_resize_reconfigure_and_restart() -> None:
    harness = EngineHarness.build("topology-aware", machine="server-4s-144")
    app = pod("app", burstable("c", "500m"))
    harness.run(app)
    harness.resize(app, "c", requests={"cpu": "2"}, limits={"cpu": "2"})
    assert harness.container(app.container_id("c")).resources.cpu_shares == 2048
    before = harness.placement()
    again = harness.restart()
    assert again.placement() == before
    assert again.reconfigure({"reservedResources": {"cpu": "2"}}).applied


def test_resize_and_delete_take_the_pod_run_returned() -> None:
    """``run`` returns a :class:`RunningPod`; it is what a test has at hand, so ``resize``
    and ``delete`` (and the functions on any engine) take it as well as the built pod."""
    harness = EngineHarness.build("topology-aware", machine="box-16")
    app = harness.run(pod("app", burstable("c", "500m")))
    harness.resize(app, "c", requests={"cpu": "2"}, limits={"cpu": "2"})
    assert harness.container(app["c"]).resources.cpu_shares == 2048
    harness.delete(app)
    assert harness.placement().containers == ()
    other = harness.run(pod("other", burstable("c", "500m")))
    resize_container(harness.engine, other, "c", requests={"cpu": "1"})
    assert harness.container(other["c"]).resources.cpu_shares == 1024
    delete_pod(harness.engine, other)
    assert harness.placement().containers == ()


# ---------------------------------------------------------------------- assertions
def test_assertions_hold_for_a_good_placement_and_explain_a_bad_one() -> None:
    harness = EngineHarness.build("topology-aware", machine="server-4s-144")
    db = harness.run(pod("db", guaranteed("pg", 4, "4Gi")))
    web = harness.run(pod("web", burstable("nginx", "500m"), burstable("log", "100m")))
    assert len(assert_exclusive(harness, db["pg"])) == 4
    node = assert_on_one_node(harness, db["pg"])
    assert_disjoint(harness, db["pg"], web["nginx"])
    held_by = harness.placement().container(db["pg"].id).group
    assert held_by == f"socket #{node}"  # one node per socket on this machine
    assert_within_pool(harness, db["pg"], held_by)
    assert_within_pool(harness, db["pg"], "root")  # an ancestor of its pool
    with pytest.raises(AssertionError, match=r"default/web/nginx's CPUs .* are not exclusive"):
        assert_exclusive(harness, web["nginx"])
    with pytest.raises(AssertionError, match=r"share CPUs"):
        assert_disjoint(harness, web["nginx"], web["log"])
    with pytest.raises(AssertionError, match=r"no pool or balloon 'nope'"):
        assert_within_pool(harness, db["pg"], "nope")
    other = (node + 1) % 4
    with pytest.raises(AssertionError, match=rf"not within socket #{other}"):
        assert_within_pool(harness, db["pg"], f"socket #{other}")
    with pytest.raises(AssertionError, match="no container 'x/y/z'"):
        assert_exclusive(harness, "x/y/z")


def test_assertions_on_balloons_and_unrestricted_containers() -> None:
    config = {
        "reservedResources": {"cpu": 1},
        "balloonTypes": [{"name": "db", "namespaces": ["db"], "minCPUs": 2, "maxCPUs": 4}],
    }
    harness = EngineHarness.build("balloons", machine="box-16", config=config)
    pg = harness.run(pod("pg", guaranteed("pg", 2, "1Gi"), namespace="db"))
    assert_within_pool(harness, pg["pg"], "db[0]")
    assert_exclusive(harness, pg["pg"])
    template = EngineHarness.build("template")
    free = template.run(pod("free", besteffort("c")))
    assert template.cpus(free["c"]) is None
    with pytest.raises(AssertionError, match="has no CPUs of its own: cpus not restricted"):
        assert_exclusive(template, free["c"])
    with pytest.raises(AssertionError, match="span NUMA nodes 0, 1, 2, 3"):
        assert_on_one_node(template, free["c"])


def test_assert_on_one_node_checks_memory_too() -> None:
    harness = EngineHarness.build("topology-aware", machine="box-16")
    db = harness.run(pod("db", guaranteed("pg", 2, "1Gi")))
    placement = harness.placement()
    pg = placement.container(db["pg"].id)
    import attrs

    spread = attrs.evolve(
        placement,
        containers=tuple(attrs.evolve(c, mems=CPUSet.parse("0-3")) for c in placement.containers),
    )
    assert_on_one_node(placement, pg.id)
    with pytest.raises(AssertionError, match="but its memory is on nodes 0-3"):
        assert_on_one_node(spread, pg.id)
    assert_on_one_node(spread, pg.id, memory=False)


# ---------------------------------------------------------------------- the pytest plugin
def test_the_plugins_fixtures(
    nrirp_engine: Callable[..., EngineHarness],
    nrirp_machine: Callable[[str], Machine],
    nrirp_kit: ModuleType,
) -> None:
    harness = nrirp_engine("topology-aware", machine="box-16")
    assert harness.machine == nrirp_machine("box-16")
    db = harness.run(nrirp_kit.pod("db", nrirp_kit.guaranteed("pg", 2, "1Gi")))
    nrirp_kit.assert_exclusive(harness, db["pg"])


def test_the_plugin_is_installed_with_the_package(tmp_path: Path) -> None:
    # a project of a policy author: no conftest, nothing of this repository on the path
    (tmp_path / "test_mine.py").write_text(
        textwrap.dedent(
            """
            def test_mine(nrirp_engine, nrirp_kit):
                harness = nrirp_engine("topology-aware", machine="server-4s-144")
                db = harness.run(nrirp_kit.pod("db", nrirp_kit.guaranteed("pg", 4, "4Gi")))
                nrirp_kit.assert_exclusive(harness, db["pg"])
                nrirp_kit.assert_on_one_node(harness, db["pg"])
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
