"""ResctrlFs on fake resctrl trees: info, groups made, changed, removed, put back."""

from __future__ import annotations

import os

import pytest

from nrirp.adapters.hostcontrol.resctrl import ResctrlFs
from nrirp.domain.hostcontrol.resctrl import BandwidthInfo, CacheInfo, ResctrlInfo, ResctrlPlan
from nrirp.domain.ports.host_control import HostControlError
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
