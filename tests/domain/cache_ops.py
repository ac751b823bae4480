"""Random changes of a cache, for property tests of its journal and of saved snapshots."""

from __future__ import annotations

import attrs

from nrirp.domain.cache import Cache
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    HOST_CONTROLLER,
    RUNTIME_CONTROLLER,
    ContainerState,
    HostChange,
    Pod,
)

from .support import make_container, make_pod

POD_NAMES = ("p0", "p1", "p2")
CONTAINER_NAMES = ("c0", "c1")
TARGETS = len(POD_NAMES) * len(CONTAINER_NAMES)
"""Changes take an integer in ``range(TARGETS)``: which pod, and which container of it."""


def pod_of(i: int, generation: int = 0) -> Pod:
    return make_pod(POD_NAMES[i % len(POD_NAMES)], labels={"gen": str(generation)})


CHANGES = (
    "put-pod",
    "change-pod",
    "remove-pod",
    "add",
    "cpus",
    "host",
    "tags",
    "move",
    "clear-runtime",
    "clear-host",
    "remove",
    "policy-data",
    "config",
    "clean",
    "replace-all",
)


def change(cache: Cache, op: str, i: int, n: int) -> None:
    """One change of the cache (ignored where it does not apply)."""
    pod = pod_of(i)
    name = CONTAINER_NAMES[i // len(POD_NAMES) % len(CONTAINER_NAMES)]
    cid = f"id-{pod.name}-{name}"
    ctr = cache.container(cid)
    # a container whose pod was removed stays until removed itself, but cannot change
    known = ctr is not None and cache.pod(ctr.pod_id) is not None
    if op == "put-pod":
        cache.put_pod(pod)
    elif op == "change-pod" and cache.pod(pod.id) is not None:
        cache.put_pod(pod_of(i, n))
    elif op == "remove-pod":
        cache.remove_pod(pod.id)
    elif op == "add" and ctr is None and cache.pod(pod.id) is not None:
        cache.put_container(make_container(pod, name, state=ContainerState.RUNNING))
    elif op == "cpus" and known:
        cache.set_cpus(cid, CPUSet.of(n % 8))
    elif op == "host" and known:
        cache.set_host_change(cid, HostChange(cgroup={"memory.high": str(n)}))
    elif op == "tags" and known:
        cache.set_tags(cid, step=str(n))
    elif op == "move" and known:  # the same container id under another known pod
        other = cache.pod(f"id-{POD_NAMES[(i + 1) % len(POD_NAMES)]}")
        if other is not None:
            cache.put_container(attrs.evolve(cache.require_container(cid), pod_id=other.id))
    elif op == "clear-runtime":
        cache.clear_pending(cid, RUNTIME_CONTROLLER)
    elif op == "clear-host":
        cache.clear_pending(cid, HOST_CONTROLLER)
    elif op == "remove":
        cache.remove_container(cid)
    elif op == "policy-data":
        cache.set_policy_data(f"policy{i % 2}", None if n % 3 == 0 else {"n": [n]})
    elif op == "config":
        cache.set_config(f"config-{n % 4}")
    elif op == "clean":
        cache.mark_clean()
    elif op == "replace-all":
        pods = [pod_of(k, n) for k in range(i % 3)]
        containers = [
            make_container(p, CONTAINER_NAMES[k], state=ContainerState.RUNNING)
            for k, p in enumerate(pods)
        ]
        cache.replace_all(pods, containers, {"restored": n})
