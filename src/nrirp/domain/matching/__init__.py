"""Match expressions evaluated against containers, pods or anything that resolves keys.

:func:`evaluate` tests a :class:`~nrirp.domain.config.expression.Expression` against a
:class:`KeyResolver`; :class:`ContainerKeys` is the resolver for a container and its pod.
:func:`container_predicate` turns an expression into a function of a container and its pod,
for testing many containers at once.
"""

from nrirp.domain.matching.evaluate import (
    NEGATIONS,
    ContainerPredicate,
    container_predicate,
    evaluate,
    expression_problems,
)
from nrirp.domain.matching.glob import glob_match, glob_problem
from nrirp.domain.matching.keys import (
    POD_KEYS_OF_CONTAINERS,
    ContainerKeys,
    JointKey,
    KeyResolver,
    MappingKeys,
    container_reader,
    key_value,
    split_joint_key,
)

__all__ = [
    "NEGATIONS",
    "POD_KEYS_OF_CONTAINERS",
    "ContainerKeys",
    "ContainerPredicate",
    "JointKey",
    "KeyResolver",
    "MappingKeys",
    "container_predicate",
    "container_reader",
    "evaluate",
    "expression_problems",
    "glob_match",
    "glob_problem",
    "key_value",
    "split_joint_key",
]
