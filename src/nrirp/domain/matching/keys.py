"""Key resolution: what an expression's ``key`` means for the thing it is evaluated against.

A key is either simple (``name``, ``labels/app``, ``pod/namespace``) or joint. A joint key reads
several simple keys at once and joins their values into one string, which lets a single
``Matches`` test look at, say, a namespace and a name together:

- full form ``:`` + key separator + value separator + sub-keys separated by the key
  separator: ``:,/pod/namespace,name`` gives ``<namespace>/<name>``;
- short form ``:`` + sub-keys separated by ``:``, joined by ``:``: ``:pod/qosclass:name``.

The separators of the full form are single characters that are neither letters nor digits, and
the key separator is not ``/`` or ``.`` (they occur inside keys); anything else is read as the
short form. A missing sub-key counts as the empty string; a joint key exists when at least one
of its sub-keys does.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Protocol

import attrs

from nrirp.domain.model import Container, Pod

JOINT_KEY_PREFIX = ":"


class KeyResolver(Protocol):
    """Something expressions can be evaluated against."""

    def resolve(self, key: str) -> str | None:
        """The value of a simple ``key``; ``None`` when the key does not exist."""
        ...


@attrs.frozen
class JointKey:
    """A joint key split into its sub-keys and the separator that joins their values."""

    keys: tuple[str, ...]
    separator: str


def _separator(char: str, *, inside_keys: bool) -> bool:
    if char.isalnum():
        return False
    return not (inside_keys and char in "/.")


@lru_cache(maxsize=4096)
def split_joint_key(key: str) -> JointKey | None:
    """The parts of a joint key, or ``None`` for a simple key."""
    if len(key) < 4 or not key.startswith(JOINT_KEY_PREFIX):
        return None
    body = key[1:]
    key_sep, value_sep = body[0], body[1]
    if _separator(key_sep, inside_keys=True) and _separator(value_sep, inside_keys=False):
        return JointKey(tuple(body[2:].split(key_sep)), value_sep)
    return JointKey(tuple(body.split(":")), ":")


def key_value(subject: KeyResolver, key: str) -> str | None:
    """The value of ``key`` (simple or joint) for ``subject``; ``None`` when it does not exist."""
    joint = split_joint_key(key)
    if joint is None:
        return subject.resolve(key)
    found = False
    values: list[str] = []
    for sub_key in joint.keys:
        value = subject.resolve(sub_key)
        if value is None:
            values.append("")
        else:
            found = True
            values.append(value)
    return joint.separator.join(values) if found else None


@attrs.frozen
class MappingKeys:
    """A resolver over a plain mapping of key -> value (handy for tests and simple subjects)."""

    values: Mapping[str, str]

    def resolve(self, key: str) -> str | None:
        if split_joint_key(key) is not None:
            return key_value(self, key)
        return self.values.get(key)


def _lookup(prefix: str, key: str, table: Mapping[str, str]) -> str | None:
    # everything after the prefix is the map key, so label keys like app.kubernetes.io/name work
    return table.get(key[len(prefix) :])


def _pod_value(pod: Pod | None, key: str) -> str | None:
    if pod is None:
        return None
    if key == "name":
        return pod.name
    if key == "namespace":
        return pod.namespace
    if key == "qosclass":
        return pod.qos_class.value if pod.qos_class is not None else None
    if key == "id":
        return pod.id
    if key == "uid":
        return pod.uid
    if key.startswith("labels/"):
        return _lookup("labels/", key, pod.labels)
    if key.startswith("annotations/"):
        return _lookup("annotations/", key, pod.annotations)
    return None


@attrs.frozen
class ContainerKeys:
    """Resolves the keys of a container and of its pod.

    Container keys: ``name``, ``id``, ``labels/<k>``, ``tags/<k>``, ``annotations/<k>``, and from
    its pod ``namespace``, ``qosclass`` and ``uid`` (a container has none of its own). Pod keys
    under ``pod/``: ``pod/name``, ``pod/namespace``, ``pod/qosclass``, ``pod/id``, ``pod/uid``,
    ``pod/labels/<k>``, ``pod/annotations/<k>``. Joint keys combine any of these. Keys that the
    subject does not have (an unknown key, a missing label, anything of a pod that is not
    known) do not exist.
    """

    container: Container
    pod: Pod | None

    def resolve(self, key: str) -> str | None:
        if split_joint_key(key) is not None:
            return key_value(self, key)
        ctr = self.container
        if key == "name":
            return ctr.name
        if key == "id":
            return ctr.id
        if key.startswith("labels/"):
            return _lookup("labels/", key, ctr.labels)
        if key.startswith("tags/"):
            return _lookup("tags/", key, ctr.tags)
        if key.startswith("annotations/"):
            return _lookup("annotations/", key, ctr.annotations)
        if key.startswith("pod/"):
            return _pod_value(self.pod, key[len("pod/") :])
        if key in ("namespace", "qosclass", "uid"):
            return _pod_value(self.pod, key)
        return None
