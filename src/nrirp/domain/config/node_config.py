"""Which configuration custom resource applies to a node, chosen as the reference does.

In the config namespace, among the resources of the active policy's kind:

1. ``node.<node>``;
2. else ``group.<group>``, when the node carries a group label: ``config.nri/group``, or one
   of the deprecated ``group.config.nri`` and ``resource-policy.nri.io/group`` (first one set
   wins, in that order);
3. else ``default``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

GROUP_LABEL = "config.nri/group"
DEPRECATED_GROUP_LABELS = ("group.config.nri", "resource-policy.nri.io/group")
GROUP_LABELS = (GROUP_LABEL, *DEPRECATED_GROUP_LABELS)
DEFAULT_CONFIG_NAME = "default"


def node_group(labels: Mapping[str, str]) -> str | None:
    """The node's configuration group from its labels, or ``None``."""
    for key in GROUP_LABELS:
        value = labels.get(key)
        if value:
            return value
    return None


def config_candidates(node: str, labels: Mapping[str, str]) -> tuple[str, ...]:
    """The resource names that may configure ``node``, most specific first."""
    group = node_group(labels)
    names = [f"node.{node}"]
    if group is not None:
        names.append(f"group.{group}")
    names.append(DEFAULT_CONFIG_NAME)
    return tuple(names)


def choose_config(node: str, labels: Mapping[str, str], existing: Collection[str]) -> str | None:
    """The name of the resource that configures ``node`` among ``existing``, or ``None``."""
    for name in config_candidates(node, labels):
        if name in existing:
            return name
    return None
