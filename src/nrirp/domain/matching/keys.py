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

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Protocol

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
    """A resolver over a plain mapping of key -> value (handy for tests and simple subjects);
    :func:`key_value` and ``evaluate`` read joint keys from it like from any resolver."""

    values: Mapping[str, str]

    def resolve(self, key: str) -> str | None:
        return self.values.get(key)


_Read = Callable[[Any], str | None]
_ContainerRead = Callable[[Container, Pod | None], str | None]


def _label(prefix: str, field: str) -> Callable[[str], _Read]:
    """Readers of map entries: everything after the prefix is the map key, so label keys such as
    ``app.kubernetes.io/name`` work (the reference splits them at '/' and never finds them)."""

    def reader(key: str) -> _Read:
        name = key[len(prefix) :]
        return lambda obj: getattr(obj, field).get(name)

    return reader


def _qos(pod: Pod) -> str | None:
    return pod.qos_class.value if pod.qos_class is not None else None


_POD_FIELDS: dict[str, _Read] = {
    "name": lambda pod: pod.name,
    "namespace": lambda pod: pod.namespace,
    "qosclass": _qos,
    "id": lambda pod: pod.id,
    "uid": lambda pod: pod.uid,
}
_POD_MAPS = {
    "labels/": _label("labels/", "labels"),
    "annotations/": _label("annotations/", "annotations"),
}
_CONTAINER_FIELDS: dict[str, _Read] = {"name": lambda ctr: ctr.name, "id": lambda ctr: ctr.id}
_CONTAINER_MAPS = {
    "labels/": _label("labels/", "labels"),
    "tags/": _label("tags/", "tags"),
    "annotations/": _label("annotations/", "annotations"),
}
POD_KEYS_OF_CONTAINERS = frozenset({"namespace", "qosclass", "uid"})
"""Container keys that are read from the container's pod (a container has none of its own)."""


def _absent(ctr: Container, pod: Pod | None) -> str | None:
    return None


def _find(
    key: str, fields: Mapping[str, _Read], maps: Mapping[str, Callable[[str], _Read]]
) -> _Read | None:
    read = fields.get(key)
    if read is not None:
        return read
    for prefix, reader in maps.items():
        if key.startswith(prefix):
            return reader(key)
    return None


def _simple_reader(key: str) -> _ContainerRead:
    if key.startswith("pod/") or key in POD_KEYS_OF_CONTAINERS:
        of_pod = _find(key.removeprefix("pod/"), _POD_FIELDS, _POD_MAPS)
        if of_pod is None:
            return _absent
        read_pod = of_pod
        return lambda ctr, pod: None if pod is None else read_pod(pod)
    of_container = _find(key, _CONTAINER_FIELDS, _CONTAINER_MAPS)
    if of_container is None:
        return _absent
    read_container = of_container
    return lambda ctr, pod: read_container(ctr)


def _joint_reader(joint: JointKey) -> _ContainerRead:
    parts = tuple(_simple_reader(key) for key in joint.keys)
    separator = joint.separator

    def read(ctr: Container, pod: Pod | None) -> str | None:
        values = [part(ctr, pod) for part in parts]
        if all(value is None for value in values):
            return None
        return separator.join("" if value is None else value for value in values)

    return read


@lru_cache(maxsize=4096)
def container_reader(key: str) -> Callable[[Container, Pod | None], str | None]:
    """A function reading ``key`` (simple or joint) of a container and its pod, as
    :class:`ContainerKeys` resolves it; built once per key."""
    joint = split_joint_key(key)
    return _simple_reader(key) if joint is None else _joint_reader(joint)


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
        return container_reader(key)(self.container, self.pod)
