"""Start ``python -m nrirp ...`` with its memory laid out at random: a setup-randomization
wrapper for benchmarks comparing two builds or two options of the daemon.

A process's speed depends a little on where its objects land (their offsets within pages and
cache lines, which pools and arenas they share), and that layout is fixed by everything
allocated before them: the same code started twice the same way lands the same way, and
loading one more module moves everything after it. A comparison of two variants then measures
their layouts as well as their work (Mytkowicz et al., "Producing wrong data without doing
anything obviously wrong!", ASPLOS 2009; Curtsinger and Berger, "Stabilizer", ASPLOS 2013).
Address space randomization and string-hash randomization already vary the rest per process;
this wrapper varies the heap layout too: before the daemon's first import it allocates, from
``--seed``, a random number of blocks of every small-object size class of the allocator from
16 bytes up (and one random-sized large block), and keeps them, so every object the daemon
makes afterwards sits at a random offset. Each variant run under a fresh seed samples the
layouts; the difference of two variants over many rounds is then their work, not their layout.

``--import`` imports modules first (never used): a control that loads code doing nothing.

    python bench/layout_shuffle.py --seed 7 -- run --policy topology-aware ...
"""

from __future__ import annotations

import argparse
import importlib
import random
import runpy
import sys

# Blocks of up to this many bytes come from CPython's small-object allocator, in size classes
# 8 bytes apart (3.11), carved out of 4 KiB pools.
_SMALL_LIMIT = 512
_ALIGNMENT = 8
_POOL = 4096

_kept: list[object] = []


def shuffle_heap(seed: int) -> int:
    """Allocate and keep blocks that put the allocator's pools and the C heap at random
    offsets; returns the bytes kept."""
    rng = random.Random(seed)
    kept = 0
    for size in range(_ALIGNMENT * 2, _SMALL_LIMIT + 1, _ALIGNMENT):
        # bytearray(n) keeps an (n + 1)-byte buffer from the small-object allocator
        for _ in range(rng.randrange(_POOL // size + 1)):
            _kept.append(bytearray(size - 1))
            kept += size
    large = rng.randrange(_POOL, 64 * _POOL)
    _kept.append(bytearray(large))
    return kept + large


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, help="shuffle the heap from this seed (else not)")
    parser.add_argument("--import", dest="imports", default="", help="modules, comma-separated")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- then nrirp's arguments")
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    for name in filter(None, args.imports.split(",")):
        importlib.import_module(name)
    if args.seed is not None:
        shuffle_heap(args.seed)
    sys.argv = ["nrirp", *argv]
    runpy.run_module("nrirp", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
