"""What a container asks of the balloons policy: its CPU request, annotations and matches.

Annotation keys are looked up as ``KEY/container.NAME``, then ``KEY/pod``, then ``KEY``
(``reference-balloons.md`` §3.1). Unusable values are reported, never fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from nrirp.domain.config import ContainerMatch, Expression, Operator, Quantity, QuantityError
from nrirp.domain.matching import ContainerKeys, container_predicate, key_value
from nrirp.domain.model import (
    RESOURCE_POLICY_DOMAIN,
    AnnotationProblem,
    AnnotationReader,
    Container,
    Pod,
    policy_key,
)
from nrirp.domain.ports.documents import DocumentError
from nrirp.domain.topology import MemoryType

BALLOON = policy_key("balloon", "balloons." + RESOURCE_POLICY_DOMAIN)
CPU_PRESERVE = policy_key("cpu.preserve")
MEMORY_PRESERVE = policy_key("memory.preserve")
HIDE_HYPERTHREADS = policy_key("hide-hyperthreads")
MEMORY_TYPE = policy_key("memory-type")
SCHEDULING_CLASS = policy_key("scheduling-class")
NODE_RESOURCES = "noderesource.dev/resources"
"""Pod annotation with the containers' resources (the reference reads requests from it first)."""

_MEMORY_TYPES = {"dram": MemoryType.DRAM, "pmem": MemoryType.PMEM, "hbm": MemoryType.HBM}


@attrs.frozen
class Request:
    """A container as the policy sees it: who it is, what it asks for."""

    container_id: str
    pod_id: str
    namespace: str
    label: str
    cpu: int
    """CPU request in mCPU."""
    balloon: str | None
    """The type named by the ``balloon`` annotation."""
    hide_hyperthreads: bool | None
    memory_types: frozenset[MemoryType] | None
    memory_preserve: bool
    memory_limit: int
    scheduling_class: str | None


def container_label(pod: Pod | None, container: Container) -> str:
    name = container.name or container.id
    if pod is None or not pod.name:
        return name
    return f"{pod.namespace}/{pod.name}/{name}"


def is_preserved(
    reader: AnnotationReader, preserve: ContainerMatch | None, ctr: Container, pod: Pod | None
) -> bool:
    """``cpu.preserve`` is exactly ``"true"``, or any ``preserve.matchExpressions`` entry
    matches: such a container is left alone entirely."""
    if reader.raw(CPU_PRESERVE) == "true":
        return True
    if preserve is None:
        return False
    return any(matches(e, ctr, pod) for e in preserve.match_expressions)


def matches(expression: Expression, ctr: Container, pod: Pod | None) -> bool:
    """The reference's evaluation, where ``Equals *`` and ``In [..., *]`` hold for any value
    of a key that exists."""
    op, values = expression.operator, expression.values
    if (op is Operator.EQUALS and values[:1] == ("*",)) or (op is Operator.IN and "*" in values):
        return key_value(ContainerKeys(ctr, pod), expression.key) is not None
    return container_predicate(expression)(ctr, pod)


def build_request(
    pod: Pod | None,
    container: Container,
    reader: AnnotationReader,
    parse: Callable[[str], Any],
) -> Request:
    """The container's request; ``parse`` reads structured annotation values (YAML)."""
    cpu = _annotated_cpu(pod, container, reader, parse)
    if cpu is None:
        cpu = container.requirements.cpu_request
    types: frozenset[MemoryType] | None = None
    raw_types = reader.raw(MEMORY_TYPE)
    if raw_types is not None:
        try:
            types = parse_memory_types(raw_types) or None
        except ValueError as exc:
            reader.problems.append(AnnotationProblem(MEMORY_TYPE, raw_types, str(exc)))
    limit = container.requirements.memory_limit
    return Request(
        container_id=container.id,
        pod_id=container.pod_id,
        namespace=pod.namespace if pod is not None else "",
        label=container_label(pod, container),
        cpu=cpu,
        balloon=reader.raw(BALLOON),
        hide_hyperthreads=reader.get_optional_bool(HIDE_HYPERTHREADS),
        memory_types=types,
        memory_preserve=reader.raw(MEMORY_PRESERVE) == "true",
        memory_limit=limit if limit is not None and limit > 0 else 0,
        scheduling_class=reader.raw(SCHEDULING_CLASS),
    )


def parse_memory_types(text: str) -> frozenset[MemoryType]:
    """``HBM,DRAM``: a comma list of dram, pmem, hbm in any case (empty: none)."""
    out: set[MemoryType] = set()
    for item in text.split(","):
        name = item.strip().lower()
        if not name:
            continue
        found = _MEMORY_TYPES.get(name)
        if found is None:
            raise ValueError(f"unknown memory type {name!r} (expected DRAM, PMEM or HBM)")
        out.add(found)
    return frozenset(out)


def _annotated_cpu(
    pod: Pod | None, container: Container, reader: AnnotationReader, parse: Callable[[str], Any]
) -> int | None:
    """The request from ``noderesource.dev/resources``: ``containers.<name>.requests.cpu``."""
    if pod is None:
        return None
    text = pod.annotations.get(NODE_RESOURCES)
    if text is None:
        return None
    try:
        data = parse(text)
        entry = _path(data, "containers", container.name)
        if entry is None:
            return None
        value = _path(entry, "requests", "cpu")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"requests.cpu of {container.name!r} is not a quantity")
        quantity = Quantity.parse(value) if isinstance(value, str) else Quantity.of(value)
    except (DocumentError, QuantityError, ValueError) as exc:
        reader.problems.append(AnnotationProblem(NODE_RESOURCES, text, str(exc)))
        return None
    return max(quantity.milli_value(), 0)


def _path(data: Any, *keys: str) -> Any:
    for key in keys:
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a mapping at {key!r}")
        data = data.get(key)
    return data
