"""ResctrlFs on fake resctrl trees: info, groups made, changed, removed, put back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import FakeHostTree
from nrirp.adapters.hostcontrol.resctrl import ResctrlFs
from nrirp.adapters.memory import InMemoryHostControl, RecordingDecisionLog, RecordingRuntimeUpdates
from nrirp.domain.config import load_policy_config
from nrirp.domain.hostcontrol.resctrl import BandwidthInfo, CacheInfo, ResctrlInfo, ResctrlPlan
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TopologyAwarePolicy
from nrirp.domain.ports.host_control import HostControlError
from nrirp.testing import fake_machine
from tests.adapters.hostcontrol.trees import host_tree, read


def test_info_from_the_tree() -> None:
    with host_tree() as tree:
        info = ResctrlFs(tree.resctrl_root).info()
    assert info == ResctrlInfo(
        l3=CacheInfo(cbm_mask=0x7FF, min_cbm_bits=1, num_closids=16, ids=(0, 1)),
        mb=BandwidthInfo(min_bandwidth=10, bandwidth_gran=10, num_closids=8, ids=(0, 1)),
    )
    with host_tree(resctrl={"l3": {"cbm_mask": "ff", "cdp": True}}) as tree:
        cdp = ResctrlFs(tree.resctrl_root).info()
    assert cdp.l3 is not None and cdp.l3.cdp and cdp.mb is None and cdp.l2 is None


def test_groups_are_made_changed_removed_and_put_back() -> None:
    with host_tree() as tree:
        fs = ResctrlFs(tree.resctrl_root)
        plan = ResctrlPlan({"gold": ("L3:0=7f0;1=7f0", "MB:0=100;1=100"), "": ("L3:0=f;1=f",)})
        fs.apply(plan)
        assert read(tree, "sys/fs/resctrl/gold/schemata") == "L3:0=7f0;1=7f0\nMB:0=100;1=100"
        assert read(tree, "sys/fs/resctrl/schemata") == "L3:0=f;1=f\nMB:0=100;1=100"
        fs.apply(ResctrlPlan({"silver": ("MB:0=50;1=50",)}))
        assert not os.path.exists(f"{tree.resctrl_root}/gold")
        assert read(tree, "sys/fs/resctrl/schemata") == "L3:0=7ff;1=7ff\nMB:0=100;1=100"
        assert read(tree, "sys/fs/resctrl/silver/schemata") == "MB:0=50;1=50"
        os.mkdir(f"{tree.resctrl_root}/theirs")  # made by someone else: left alone
        fs.restore()
        assert sorted(os.listdir(tree.resctrl_root)) == [
            "cpus_list",
            "info",
            "schemata",
            "tasks",
            "theirs",
        ]


def test_no_resctrl_or_read_only() -> None:
    missing = r"no resctrl: .* is missing"
    with host_tree(resctrl=None) as tree, pytest.raises(HostControlError, match=missing):
        ResctrlFs(tree.resctrl_root).info()
    read_only = "resctrl cannot be changed: read-only: "
    with (
        host_tree(read_only=["sys/fs/resctrl/schemata"]) as tree,
        pytest.raises(HostControlError, match=read_only),
    ):
        ResctrlFs(tree.resctrl_root).info()


# ---------------------------------------------------------------- restarts of the daemon
# A daemon on the fake tree: the resource manager with the topology-aware policy and
# ResctrlFs (journal in the state dir, as the daemon has it). runc puts a container's task in
# its group by writing the group's ``tasks``; on a real resctrl, removing the group would move
# the task to the root group, here it removes the ``tasks`` file with the group.

MACHINE = fake_machine("server-112-pmem")
RDT = {
    "enable": True,
    "partitions": {
        "p": {
            "l3Allocation": "100%",
            "classes": {"gold": {}, "bronze": {"l3Allocation": "25%"}},
        }
    },
}


def daemon(tree: FakeHostTree, rdt: dict[str, Any], journal: Path | None) -> ResourceManager:
    config = load_policy_config(
        "topology-aware", {"reservedResources": {"cpu": "cpuset:0"}, "control": {"rdt": rdt}}
    )
    root = tree.resctrl_root
    fs = ResctrlFs(root) if journal is None else ResctrlFs(root, journal=str(journal))
    manager = ResourceManager(
        policy=TopologyAwarePolicy(),
        machine=MACHINE,
        updates=RecordingRuntimeUpdates(),
        host=InMemoryHostControl(),
        decisions=RecordingDecisionLog(),
        resctrl=fs,
    )
    manager.start(config)
    return manager


def reconfigure(manager: ResourceManager, rdt: dict[str, Any]) -> None:
    config = load_policy_config(
        "topology-aware", {"reservedResources": {"cpu": "cpuset:0"}, "control": {"rdt": rdt}}
    )
    assert manager.reconfigure(config).applied


def place(tree: FakeHostTree, group: str, pid: int | None) -> None:
    """runc puts ``pid`` in ``group`` (``None``: its container exited)."""
    with open(f"{tree.resctrl_root}/{group}/tasks", "w", encoding="utf-8") as f:
        f.write(f"{pid}\n" if pid is not None else "")


def inode(tree: FakeHostTree, group: str) -> int:
    return os.stat(f"{tree.resctrl_root}/{group}").st_ino


@pytest.mark.parametrize("journalled", [True, False])
def test_a_restart_keeps_running_containers_in_their_groups(
    tmp_path: Path, journalled: bool
) -> None:
    journal = tmp_path / "host-resctrl.json" if journalled else None
    with host_tree() as tree:
        first = daemon(tree, RDT, journal)
        place(tree, "gold", 4242)
        gold = inode(tree, "gold")
        first.shutdown()
        # the configured group holding a task stays, the task in it; the empty one goes
        assert read(tree, "sys/fs/resctrl/gold/tasks") == "4242"
        assert inode(tree, "gold") == gold
        assert not os.path.exists(f"{tree.resctrl_root}/bronze")
        assert read(tree, "sys/fs/resctrl/schemata") == "L3:0=7ff;1=7ff\nMB:0=100;1=100"
        second = daemon(tree, RDT, journal)
        assert inode(tree, "gold") == gold  # adopted, not removed and made again
        assert read(tree, "sys/fs/resctrl/gold/tasks") == "4242"
        assert read(tree, "sys/fs/resctrl/gold/schemata") == "L3:0=7ff;1=7ff"
        assert read(tree, "sys/fs/resctrl/bronze/schemata") == "L3:0=7;1=7"
        second.shutdown()
        second.shutdown()  # twice is fine
        assert inode(tree, "gold") == gold
        # its container exited: the next stop removes the adopted group
        third = daemon(tree, RDT, journal)
        place(tree, "gold", None)
        third.shutdown()
        assert sorted(os.listdir(tree.resctrl_root)) == [
            "cpus_list",
            "info",
            "schemata",
            "tasks",
        ]
        assert journal is None or not journal.exists()


def test_a_killed_daemons_groups_are_adopted(tmp_path: Path) -> None:
    with host_tree() as tree:
        daemon(tree, RDT, None)  # killed: never shut down
        place(tree, "gold", 4242)
        gold = inode(tree, "gold")
        second = daemon(tree, RDT, None)
        assert inode(tree, "gold") == gold
        assert read(tree, "sys/fs/resctrl/gold/tasks") == "4242"
        place(tree, "gold", None)
        second.shutdown()  # adopted: its own to remove once empty
        assert not os.path.exists(f"{tree.resctrl_root}/gold")
        assert not os.path.exists(f"{tree.resctrl_root}/bronze")


def test_a_killed_daemons_journal_names_its_groups(tmp_path: Path) -> None:
    journal = tmp_path / "host-resctrl.json"
    classes = {"gold": {}, "system/default": {"l3Allocation": "50%"}}
    with_root = {"enable": True, "partitions": {"p": {"l3Allocation": "100%", "classes": classes}}}
    with host_tree() as tree:
        daemon(tree, with_root, journal)
        assert read(tree, "sys/fs/resctrl/schemata").startswith("L3:0=3f;1=3f")
        place(tree, "gold", 4242)
        # killed; the next configuration has only bronze: gold (a task in it) is kept for
        # now, the root group's schemata as the first daemon found them
        only_bronze = {
            "enable": True,
            "partitions": {"p": {"classes": {"bronze": {"l3Allocation": "25%"}}}},
        }
        second = daemon(tree, only_bronze, journal)
        assert read(tree, "sys/fs/resctrl/gold/tasks") == "4242"
        second.shutdown()
        assert read(tree, "sys/fs/resctrl/schemata") == "L3:0=7ff;1=7ff\nMB:0=100;1=100"
        # gold is not configured: the stop removed it (its task goes to the root group)
        assert not os.path.exists(f"{tree.resctrl_root}/gold")
        assert not journal.exists()
        # killed again, with gold empty now: the next start removes it
        daemon(tree, RDT, journal)
        third = daemon(tree, only_bronze, journal)
        assert not os.path.exists(f"{tree.resctrl_root}/gold")
        place(tree, "bronze", 7)
        third.shutdown()
        assert read(tree, "sys/fs/resctrl/bronze/tasks") == "7"


def test_a_configuration_without_rdt_removes_the_groups(tmp_path: Path) -> None:
    journal = tmp_path / "host-resctrl.json"
    with host_tree() as tree:
        manager = daemon(tree, RDT, journal)
        place(tree, "gold", 4242)
        reconfigure(manager, {})  # at the reconfiguration, tasks or not
        assert not os.path.exists(f"{tree.resctrl_root}/gold")
        assert not journal.exists()
        reconfigure(manager, RDT)
        place(tree, "gold", 4242)
        manager.shutdown()
        assert os.path.exists(f"{tree.resctrl_root}/gold")
        # the next daemon starts without RDT: the groups it finds journalled go at its start
        daemon(tree, {}, journal)
        assert not os.path.exists(f"{tree.resctrl_root}/gold")
        assert not journal.exists()


def test_a_journal_naming_no_group_of_ours_is_ignored(tmp_path: Path) -> None:
    journal = tmp_path / "host-resctrl.json"
    journal.write_text('{"groups": ["info", "..", "a/b", ""], "schemata": {}}')
    with host_tree() as tree:
        fs = ResctrlFs(tree.resctrl_root, journal=str(journal))
        fs.clear()
        assert os.path.isdir(f"{tree.resctrl_root}/info") and not journal.exists()
