"""ProcInterruptControl on fake /proc trees."""

from __future__ import annotations

import pytest

from nrirp.adapters.hostcontrol.irq import ProcInterruptControl, cpus_to_mask, mask_to_cpus
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.interrupts import Affinities
from nrirp.domain.ports.host_control import HostControlError
from tests.adapters.hostcontrol.trees import host_tree, read


def test_lists_movable_interrupts_with_their_handlers() -> None:
    with host_tree() as tree:
        irqs = ProcInterruptControl(tree.procfs_root).interrupts()
    assert [(i.number, i.description) for i in irqs][:3] == [
        (9, "acpi"),  # 0 (the timer) is read-only: not listed
        (40, "eth0-TxRx-0"),
        (41, "eth0-TxRx-1"),
    ]
    assert irqs[0].affinity == CPUSet.parse("0-111")


def test_apply_restore_and_the_default_mask() -> None:
    with host_tree() as tree:
        control = ProcInterruptControl(tree.procfs_root)
        control.interrupts()
        control.apply(Affinities({40: CPUSet.parse("2-3"), 60: CPUSet.of(5)}, CPUSet.parse("0-7")))
        assert read(tree, "proc/irq/40/smp_affinity_list") == "2-3"
        assert read(tree, "proc/irq/60/smp_affinity_list") == "5"
        assert read(tree, "proc/irq/default_smp_affinity") == "00000000,00000000,00000000,000000ff"
        # the original affinity stays what rules about "its own affinity" see
        assert next(i for i in control.interrupts() if i.number == 40).affinity == CPUSet.parse(
            "0-111"
        )
        control.apply(Affinities({60: CPUSet.of(6)}))
        assert read(tree, "proc/irq/40/smp_affinity_list") == "0-111"
        assert read(tree, "proc/irq/default_smp_affinity") == "0000ffff,ffffffff,ffffffff,ffffffff"
        control.restore()
        assert read(tree, "proc/irq/60/smp_affinity_list") == "0-111"


def test_missing_or_read_only_proc_irq() -> None:
    missing = r"no interrupt control: .*/proc/irq is missing"
    with host_tree(interrupts=[]) as tree, pytest.raises(HostControlError, match=missing):
        ProcInterruptControl(tree.procfs_root).interrupts()
    read_only = "no interrupt can be steered: read-only: "
    with (
        host_tree(interrupts=[{"irq": 5, "read_only": True}]) as tree,
        pytest.raises(HostControlError, match=read_only),
    ):
        ProcInterruptControl(tree.procfs_root).interrupts()


def test_masks_both_ways() -> None:
    assert cpus_to_mask(CPUSet.parse("0-3,32"), 1) == "00000001,0000000f"
    assert mask_to_cpus("00000001,0000000f") == CPUSet.parse("0-3,32")
    assert cpus_to_mask(CPUSet(), 2) == "00000000,00000000"
