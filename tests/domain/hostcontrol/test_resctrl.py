"""control.rdt laid out as resctrl groups, checked against what the host offers."""

from __future__ import annotations

from typing import Any

import pytest

from nrirp.domain.config import RDTConfig
from nrirp.domain.config.converter import structure
from nrirp.domain.hostcontrol.resctrl import (
    BandwidthInfo,
    CacheInfo,
    RdtPlanError,
    ResctrlInfo,
    plan_resctrl,
)

L3 = CacheInfo(cbm_mask=0xFFF, min_cbm_bits=2, num_closids=16, ids=(0, 1))
MB = BandwidthInfo(min_bandwidth=10, bandwidth_gran=10, num_closids=8, ids=(0, 1))


def rdt(data: dict[str, Any]) -> RDTConfig:
    config, issues = structure({"enable": True, **data}, RDTConfig)
    assert config is not None and not issues, issues
    return config


def test_partitions_and_classes_become_groups_with_schemata() -> None:
    config = rdt(
        {
            "partitions": {
                "exclusive": {
                    "l3Allocation": "50%",
                    "mbAllocation": ["100%"],
                    "classes": {"Guaranteed": {"l3Allocation": "100%"}},
                },
                "shared": {
                    "l3Allocation": "50%",
                    "mbAllocation": ["50%"],
                    "classes": {
                        "Burstable": {"l3Allocation": "100%", "mbAllocation": ["100%"]},
                        "BestEffort": {"l3Allocation": "50%", "mbAllocation": ["50%"]},
                        "system/default": {"l3Allocation": {"all": "100%", "1": "0x3"}},
                    },
                },
            }
        }
    )
    plan = plan_resctrl(config, ResctrlInfo(l3=L3, mb=MB))
    assert dict(plan.groups) == {
        "Guaranteed": ("L3:0=3f;1=3f", "MB:0=100;1=100"),
        "Burstable": ("L3:0=fc0;1=fc0", "MB:0=50;1=50"),
        "BestEffort": ("L3:0=1c0;1=1c0", "MB:0=30;1=30"),  # 25% rounded up to the granularity
        "": ("L3:0=fc0;1=c0", "MB:0=50;1=50"),  # system/default is the root group
    }


def test_what_the_hardware_lacks_is_named() -> None:
    config = rdt(
        {
            "partitions": {
                "p": {
                    "l2Allocation": "50%",
                    "mbAllocation": ["1000MBps"],
                    "classes": {"c": {"l3Allocation": {"all": {"code": "50%", "data": "50%"}}}},
                }
            }
        }
    )
    with pytest.raises(RdtPlanError) as raised:
        plan_resctrl(config, ResctrlInfo(l3=L3, mb=MB))
    assert raised.value.problems == [
        "control.rdt.partitions[*].l2Allocation: this host has no L2 cache allocation "
        "(no resctrl info/L2); set options.l2.optional to go without it",
        "control.rdt.partitions.p.classes.c.l3Allocation: cache id 0: code/data shares need "
        "CDP (resctrl mounted with cdp), which is not on: give 'unified'",
        "control.rdt.partitions.p.classes.c.l3Allocation: cache id 1: code/data shares need "
        "CDP (resctrl mounted with cdp), which is not on: give 'unified'",
        "control.rdt.partitions.p.mbAllocation: cache id 0: none of 1000MBps is in this "
        "host's unit, percent",
        "control.rdt.partitions.p.mbAllocation: cache id 1: none of 1000MBps is in this "
        "host's unit, percent",
    ]
    optional = rdt({**_l2_only(), "options": {"l2": {"optional": True}}})
    plan = plan_resctrl(optional, ResctrlInfo(l3=L3))
    assert plan.groups == {"c": ()}
    assert plan.notes == (
        "control.rdt: this host has no L2 cache allocation (no resctrl info/L2); "
        "left out (options.l2.optional)",
    )


def _l2_only() -> dict[str, Any]:
    return {"partitions": {"p": {"l2Allocation": "50%", "classes": {"c": {}}}}}


def test_masks_need_enough_contiguous_bits_and_closids() -> None:
    tight = CacheInfo(cbm_mask=0xF, min_cbm_bits=2, num_closids=2)
    config = rdt(
        {
            "partitions": {
                "p": {
                    "l3Allocation": "100%",
                    "classes": {"a": {"l3Allocation": "0x5"}, "b": {"l3Allocation": "10%"}},
                }
            }
        }
    )
    with pytest.raises(RdtPlanError) as raised:
        plan_resctrl(config, ResctrlInfo(l3=tight))
    assert raised.value.problems == [
        "control.rdt.partitions.p.classes.a.l3Allocation: cache id 0: bitmask 0x5 is not "
        "contiguous (resctrl needs one run of bits)",
        "control.rdt.partitions: 2 classes need 2 resctrl groups; L3 has 2 classes of service, "
        "one of them the root group's",
    ]
    with pytest.raises(RdtPlanError, match="does not fit after bit 3"):
        plan_resctrl(
            rdt({"partitions": {"a": {"l3Allocation": "75%"}, "b": {"l3Allocation": "50%"}}}),
            ResctrlInfo(l3=tight),
        )
