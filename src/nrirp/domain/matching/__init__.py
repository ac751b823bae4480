"""Match expressions evaluated against containers, pods or anything that resolves keys.

:func:`evaluate` tests a :class:`~nrirp.domain.config.expression.Expression` against a
:class:`KeyResolver`; :class:`ContainerKeys` is the resolver for a container and its pod.
:func:`compile_predicate` turns an expression into a function of a container and its pod,
for testing many containers at once (:func:`container_predicate` remembers recent ones);
:class:`GlobSet` matches a value against a list of globs at a cost independent of its length.
"""

from nrirp.domain.matching.evaluate import (
    NEGATIONS,
    ContainerPredicate,
    compile_predicate,
    container_predicate,
    evaluate,
    expression_problems,
)
from nrirp.domain.matching.glob import glob_match, glob_problem
from nrirp.domain.matching.globset import GlobSet
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
from nrirp.domain.matching.namespaces import NamespaceFilter

__all__ = [
    "NEGATIONS",
    "POD_KEYS_OF_CONTAINERS",
    "ContainerKeys",
    "ContainerPredicate",
    "GlobSet",
    "JointKey",
    "KeyResolver",
    "MappingKeys",
    "NamespaceFilter",
    "compile_predicate",
    "container_predicate",
    "container_reader",
    "evaluate",
    "expression_problems",
    "glob_match",
    "glob_problem",
    "key_value",
    "split_joint_key",
]
