"""Errors of the CPU allocator."""

from __future__ import annotations


class CPUAllocationError(ValueError):
    """Not enough usable CPUs, or a request that cannot be met.

    The message names how many CPUs were asked for, from which set, how many of them were
    usable and why the others were not.
    """
