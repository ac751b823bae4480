"""Match expressions evaluated against containers, pods or anything that resolves keys.

:func:`evaluate` tests a :class:`~nrirp.domain.config.expression.Expression` against a
:class:`KeyResolver`; :class:`ContainerKeys` is the resolver for a container and its pod.
"""

from nrirp.domain.matching.evaluate import NEGATIONS, evaluate, expression_problems
from nrirp.domain.matching.glob import glob_match, glob_problem
from nrirp.domain.matching.keys import (
    ContainerKeys,
    JointKey,
    KeyResolver,
    MappingKeys,
    key_value,
    split_joint_key,
)

__all__ = [
    "NEGATIONS",
    "ContainerKeys",
    "JointKey",
    "KeyResolver",
    "MappingKeys",
    "evaluate",
    "expression_problems",
    "glob_match",
    "glob_problem",
    "key_value",
    "split_joint_key",
]
