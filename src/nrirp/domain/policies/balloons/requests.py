"""What a container asks of the balloons policy: its CPU request, annotations and matches.

Annotation keys are looked up as ``KEY/container.NAME``, then ``KEY/pod``, then ``KEY``
(``reference-balloons.md`` §3.1). Unusable values are reported, never fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from nrirp.domain.config import ContainerMatch, Expression, Operator, Quantity, QuantityError
from nrirp.domain.config.balloons import RESERVED
from nrirp.domain.matching import (
    ContainerKeys,
    ContainerPredicate,
    NamespaceFilter,
    compile_predicate,
    container_predicate,
    container_reader,
    key_value,
)
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
    reader: AnnotationReader,
    preserve: ContainerMatch | Sequence[ContainerPredicate] | None,
    ctr: Container,
    pod: Pod | None,
    privileged: NamespaceFilter | None = None,
) -> bool:
    """``cpu.preserve`` is exactly ``"true"`` (where ``privileged`` allows it), or any
    ``preserve.matchExpressions`` entry (or its compiled predicate) matches: such a container
    is left alone entirely."""
    if reader.raw(CPU_PRESERVE) == "true" and not _refused(reader, CPU_PRESERVE, pod, privileged):
        return True
    if preserve is None:
        return False
    if isinstance(preserve, ContainerMatch):
        return any(matches(e, ctr, pod) for e in preserve.match_expressions)
    return any(predicate(ctr, pod) for predicate in preserve)


def _refused(
    reader: AnnotationReader, key: str, pod: Pod | None, privileged: NamespaceFilter | None
) -> bool:
    """Whether privileged annotation ``key`` is not allowed in the pod's namespace (then
    reported: it is ignored)."""
    namespace = pod.namespace if pod is not None else ""
    if privileged is None or privileged.allows(namespace):
        return False
    reader.problems.append(
        AnnotationProblem(
            key,
            reader.raw(key) or "",
            f"not allowed in namespace {namespace!r} "
            f"(privilegedAnnotations.allowedNamespaces: {privileged.describe()})",
        )
    )
    return True


def matches(expression: Expression, ctr: Container, pod: Pod | None) -> bool:
    """The reference's evaluation, where ``Equals *`` and ``In [..., *]`` hold for any value
    of a key that exists."""
    op, values = expression.operator, expression.values
    if (op is Operator.EQUALS and values[:1] == ("*",)) or (op is Operator.IN and "*" in values):
        return key_value(ContainerKeys(ctr, pod), expression.key) is not None
    return container_predicate(expression)(ctr, pod)


def compile_match(expression: Expression) -> ContainerPredicate:
    """:func:`matches` as a predicate built once (per configuration): its cost does not grow
    with the expression's values."""
    op, values = expression.operator, expression.values
    if (op is Operator.EQUALS and values[:1] == ("*",)) or (op is Operator.IN and "*" in values):
        read = container_reader(expression.key)
        return lambda ctr, pod: read(ctr, pod) is not None
    return compile_predicate(expression)


def build_request(
    pod: Pod | None,
    container: Container,
    reader: AnnotationReader,
    parse: Callable[[str], Any],
    privileged: NamespaceFilter | None = None,
) -> Request:
    """The container's request; ``parse`` reads structured annotation values (YAML).
    ``privileged``: where ``balloon: reserved`` and ``memory.preserve`` are allowed (default:
    everywhere); elsewhere they are reported and ignored."""
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
    balloon = reader.raw(BALLOON)
    if balloon == RESERVED and _refused(reader, BALLOON, pod, privileged):
        balloon = None  # the type is chosen as without the annotation
    memory_preserve = reader.raw(MEMORY_PRESERVE) == "true"
    if memory_preserve and _refused(reader, MEMORY_PRESERVE, pod, privileged):
        memory_preserve = False
    return Request(
        container_id=container.id,
        pod_id=container.pod_id,
        namespace=pod.namespace if pod is not None else "",
        label=container_label(pod, container),
        cpu=cpu,
        balloon=balloon,
        hide_hyperthreads=reader.get_optional_bool(HIDE_HYPERTHREADS),
        memory_types=types,
        memory_preserve=memory_preserve,
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
