"""Topology hints: where a container's devices sit (CPUs, NUMA nodes, sockets), and how well
a pool of CPUs matches them.

A hint comes from something the container was given - a device node, a mount of a device's
sysfs directory or of a path on a block device, or (later) the kubelet's pod-resources API -
and names the *provider* the locality was read from (a sysfs device directory such as
``/sys/devices/pci0000:00/0000:00:02.0``, or ``podresapi:NAME``). Which hints count for a
container is chosen by its annotations (:func:`select_hints`):

* ``topologyhints.resource-policy.nri.io``: ``true`` (the default sources), ``false``/``none``
  (no hints), or a comma-separated list of ``mounts``, ``devices``, ``pod-resources``, ``all``;
* ``allow.topologyhints.resource-policy.nri.io``: only hints whose provider or path matches;
* ``deny.topologyhints.resource-policy.nri.io``: drop hints whose provider or path matches
  (deny wins over allow).

Patterns are globs (``*``, ``?``, ``[...]``; ``*`` does not cross ``/``, as Go's
``filepath.Match``) or path prefixes. See docs/topology-hints.md.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, TypeVar

import attrs

from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.model.annotations import (
    AnnotationProblem,
    AnnotationReader,
    effective_annotation,
    parse_bool,
    policy_key,
)
from nrirp.domain.ports.documents import AnnotationParser, DocumentError

TOPOLOGY_HINTS_KEY = policy_key("topologyhints")
ALLOW_TOPOLOGY_HINTS_KEY = policy_key("allow.topologyhints")
DENY_TOPOLOGY_HINTS_KEY = policy_key("deny.topologyhints")

T = TypeVar("T")


class HintOrigin(enum.Enum):
    """What in the container's spec a hint was derived from (the ``topologyhints`` tokens)."""

    MOUNTS = "mounts"
    DEVICES = "devices"
    POD_RESOURCES = "pod-resources"


DEFAULT_HINT_ORIGINS = frozenset({HintOrigin.MOUNTS, HintOrigin.DEVICES})
"""Sources used when the container has no ``topologyhints`` annotation (or it is ``true``)."""
ALL_HINT_ORIGINS = frozenset(HintOrigin)


@attrs.frozen
class TopologyHint:
    """Locality of one provider. Empty sets mean "not given"; a hint gives at least one.

    ``origin`` says where the hint came from and ``path`` what the container was given (the
    mount's host path or the device node), both used by :func:`select_hints`.
    """

    provider: str
    cpus: CPUSet = EMPTY
    nodes: CPUSet = EMPTY
    sockets: CPUSet = EMPTY
    origin: HintOrigin = HintOrigin.DEVICES
    path: str = ""

    def is_empty(self) -> bool:
        return not (self.cpus or self.nodes or self.sockets)

    def __str__(self) -> str:
        parts = [
            f"{name} {value}"
            for name, value in (
                ("cpus", self.cpus),
                ("nodes", self.nodes),
                ("sockets", self.sockets),
            )
            if value
        ]
        return f"{self.provider}: {', '.join(parts) or 'no locality'}"


def hint_score(hint: TopologyHint, *, cpus: CPUSet, nodes: CPUSet, sockets: CPUSet) -> float:
    """How much of ``hint`` lies in a pool with these CPUs, NUMA nodes and sockets: 0..1.

    The hint's CPUs are compared when it gives CPUs, else its nodes, else its sockets; the
    score is the fraction of them the pool has. A hint without locality scores 1 (neutral).
    """
    for wanted, have in ((hint.cpus, cpus), (hint.nodes, nodes), (hint.sockets, sockets)):
        if wanted:
            return len(wanted & have) / len(wanted)
    return 1.0


# ---------------------------------------------------------------------- selection
@attrs.frozen
class PathPattern:
    """A glob (``glob=True``) or a plain prefix matched against providers and paths."""

    text: str
    glob: bool

    def matches(self, value: str) -> bool:
        if not value:
            return False
        if self.glob:
            return _glob_regex(self.text).fullmatch(value) is not None
        return value.startswith(self.text)


_GLOB_CHARS = frozenset("*?[")


def parse_patterns(text: str, parser: AnnotationParser) -> tuple[PathPattern, ...]:
    """Patterns from an allow/deny annotation value (raises ``ValueError`` when unusable).

    Accepted forms: a comma-separated list (``/dev/nvme*,/sys/devices/pci0000:00``), a YAML
    list of strings, or the reference's YAML mapping ``{type: glob|prefix, paths: [...]}``
    (YAML read by ``parser``). In the first two forms an entry with ``*``, ``?`` or ``[`` is a
    glob, anything else a prefix.
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError("no paths given")
    data: Any = stripped
    if stripped[0] in "[{-" or "\n" in stripped or stripped.startswith(("type:", "paths:")):
        try:
            data = parser.parse(stripped)
        except DocumentError as exc:
            raise ValueError(f"not a path list: {exc}") from None
    if isinstance(data, str):
        entries = [part.strip() for part in data.split(",")]
        return _patterns(entries, None)
    if isinstance(data, list):
        return _patterns(data, None)
    if isinstance(data, Mapping):
        return _typed_patterns(data)
    raise ValueError("expected a path list, a comma-separated list or {type, paths}")


def _typed_patterns(data: Mapping[Any, Any]) -> tuple[PathPattern, ...]:
    unknown = sorted(str(k) for k in data if k not in ("type", "paths"))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (expected 'type' and 'paths')")
    kind = data.get("type", "prefix")
    if kind not in ("glob", "prefix"):
        raise ValueError(f"type {kind!r}: expected 'glob' or 'prefix'")
    paths = data.get("paths")
    if not isinstance(paths, list):
        raise ValueError("'paths' must be a list of paths")
    return _patterns(paths, kind == "glob")


def _patterns(entries: Iterable[Any], glob: bool | None) -> tuple[PathPattern, ...]:
    out = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(f"invalid path {entry!r}: expected a non-empty text")
        text = entry.strip()
        is_glob = bool(_GLOB_CHARS & set(text)) if glob is None else glob
        if is_glob:
            _glob_regex(text)  # reject malformed globs now
        out.append(PathPattern(text, is_glob))
    if not out:
        raise ValueError("no paths given")
    return tuple(out)


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Go ``filepath.Match`` semantics: ``*``/``?`` never match ``/``; ``[^...]``/``[!...]``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                raise ValueError(f"invalid glob {pattern!r}: '[' without ']'")
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            if not body:
                raise ValueError(f"invalid glob {pattern!r}: empty character class")
            escaped = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
            out.append(f"[^/{escaped}]" if negate else f"[{escaped}]")
            i = end
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as exc:
        raise ValueError(f"invalid glob {pattern!r}: {exc}") from None


def parse_origins(text: str) -> frozenset[HintOrigin]:
    """The hint sources a ``topologyhints`` value enables (raises ``ValueError``)."""
    try:
        return DEFAULT_HINT_ORIGINS if parse_bool(text) else frozenset()
    except ValueError:
        pass
    out: set[HintOrigin] = set()
    for token in (t.strip().lower() for t in text.split(",")):
        if token == "all":
            out |= ALL_HINT_ORIGINS
        elif token == "none":
            continue
        else:
            try:
                out.add(HintOrigin(token))
            except ValueError:
                raise ValueError(
                    f"unknown hint source {token!r}: expected true, false or a list of "
                    "mounts, devices, pod-resources, all, none"
                ) from None
    return frozenset(out)


def _annotation(reader: AnnotationReader, key: str, parse: Callable[[str], T], default: T) -> T:
    found = effective_annotation(reader.annotations, key, reader.container_name)
    if found is None:
        return default
    matched, value = found
    try:
        return parse(value)
    except ValueError as exc:
        reader.problems.append(AnnotationProblem(matched, value, str(exc)))
        return default


@attrs.frozen
class HintSelection:
    """What a container's annotations let through (see :func:`select_hints`)."""

    origins: frozenset[HintOrigin] = DEFAULT_HINT_ORIGINS
    allow: tuple[PathPattern, ...] | None = None
    deny: tuple[PathPattern, ...] = ()

    @classmethod
    def from_annotations(cls, reader: AnnotationReader, parser: AnnotationParser) -> HintSelection:
        """The selection ``reader``'s annotations ask for (YAML values read by ``parser``);
        unusable values are recorded as problems on ``reader`` and replaced by the default
        (allow/deny: no filtering)."""

        def patterns(text: str) -> tuple[PathPattern, ...]:
            return parse_patterns(text, parser)

        no_allow_list: tuple[PathPattern, ...] | None = None
        return cls(
            origins=_annotation(reader, TOPOLOGY_HINTS_KEY, parse_origins, DEFAULT_HINT_ORIGINS),
            allow=_annotation(reader, ALLOW_TOPOLOGY_HINTS_KEY, patterns, no_allow_list),
            deny=_annotation(reader, DENY_TOPOLOGY_HINTS_KEY, patterns, ()),
        )

    def admits(self, hint: TopologyHint) -> bool:
        if hint.origin not in self.origins:
            return False
        subjects = (hint.provider, hint.path)
        if any(p.matches(s) for p in self.deny for s in subjects):
            return False
        return self.allow is None or any(p.matches(s) for p in self.allow for s in subjects)


def select_hints(
    hints: Mapping[str, TopologyHint], annotations: AnnotationReader, parser: AnnotationParser
) -> dict[str, TopologyHint]:
    """The hints the container's annotations let through: its sources (``topologyhints``),
    then the allow list (when given, only matching hints), then the deny list (which wins).
    A pattern matches a hint when it matches its provider or its path. YAML values are read
    by ``parser``."""
    selection = HintSelection.from_annotations(annotations, parser)
    return {key: hint for key, hint in hints.items() if selection.admits(hint)}
