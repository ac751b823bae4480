"""The ``balloons`` policy: containers run in balloons of CPUs that inflate and deflate.

See docs/balloons.md. ``policy.py`` is the Policy port; ``catalog.py`` expands the
configuration, ``engine.py`` keeps the balloons and sizes them, ``fill.py`` picks a
container's balloon, ``resize.py`` (over ``cputree.py``) picks CPUs, ``pinning.py`` and
``memory.py`` decide what members run with, ``persist.py`` what survives a restart and
``export.py`` zones, metrics and the description.
"""

from nrirp.domain.policies.balloons.policy import BalloonsPolicy

__all__ = ["BalloonsPolicy"]
