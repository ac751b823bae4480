from __future__ import annotations

import json
import threading
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.cache import (
    Cache,
    Snapshot,
    SnapshotEncoder,
    SnapshotError,
    structure_snapshot,
    unstructure_snapshot,
)
from nrirp.domain.cache.snapshot import SNAPSHOT_VERSION
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    Container,
    ContainerState,
    Device,
    HostChange,
    IOPriority,
    IOPriorityClass,
    LinuxResources,
    Mount,
    PendingChanges,
    Pod,
    QOSClass,
    Requirements,
    Scheduling,
    SchedulingPolicy,
)

ids = st.text(alphabet="abcdef0123456789-", min_size=1, max_size=12)
names = st.text(min_size=0, max_size=8)
str_maps = st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3)
small = st.integers(min_value=0, max_value=1 << 40)
cpusets = st.frozensets(st.integers(min_value=0, max_value=300), max_size=8).map(CPUSet.from_ids)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)

resources = st.builds(
    LinuxResources,
    cpu_shares=st.none() | small,
    cpu_quota=st.none() | st.integers(-1, 1 << 30),
    cpu_period=st.none() | small,
    cpus=st.none() | cpusets,
    mems=st.none() | cpusets,
    memory_limit=st.none() | small,
    hugepage_limits=st.dictionaries(st.sampled_from(["2MB", "1GB"]), small, max_size=2),
    rdt_class=st.none() | names,
    blockio_class=st.none() | names,
    unified=str_maps,
    pids_limit=st.none() | small,
)
scheduling = st.builds(
    Scheduling,
    policy=st.sampled_from(SchedulingPolicy),
    nice=st.none() | st.integers(-20, 19),
    flags=st.lists(st.text(max_size=4), max_size=2).map(tuple),
)
pending = st.builds(
    PendingChanges,
    resources=resources,
    annotations=str_maps,
    env=str_maps,
    mounts=st.lists(st.builds(Mount, names, names), max_size=2).map(tuple),
    scheduling=st.none() | scheduling,
    io_priority=st.none() | st.builds(IOPriority, st.sampled_from(IOPriorityClass), small),
    host=st.builds(HostChange, cgroup=str_maps, cpu_class=st.none() | names),
    controllers=st.frozensets(st.sampled_from(["runtime", "host", "x"])),
)


@st.composite
def cache_states(draw: st.DrawFn) -> tuple[list[Pod], list[Container], dict[str, Any]]:
    pod_ids = draw(st.lists(ids, min_size=0, max_size=4, unique=True))
    pods = [
        draw(
            st.builds(
                Pod,
                id=st.just(pid),
                name=names,
                namespace=names,
                labels=str_maps,
                annotations=str_maps,
                cgroup_parent=st.sampled_from(["", "/kubepods/burstable/podx"]),
                resources=st.none() | resources,
                qos_class=st.none() | st.sampled_from(QOSClass),
                created_at=st.none() | st.floats(0, 1e10),
            )
        )
        for pid in pod_ids
    ]
    containers: list[Container] = []
    if pods:
        ctr_ids = draw(st.lists(ids, max_size=6, unique=True))
        for cid in ctr_ids:
            containers.append(
                draw(
                    st.builds(
                        Container,
                        id=st.just(cid),
                        pod_id=st.sampled_from(pod_ids),
                        name=names,
                        state=st.sampled_from(ContainerState),
                        labels=str_maps,
                        resources=resources,
                        requirements=st.builds(Requirements, small, st.none() | small, small),
                        oom_score_adj=st.none() | st.integers(-1000, 1000),
                        devices=st.lists(st.builds(Device, names), max_size=2).map(tuple),
                        tags=str_maps,
                        pending=pending,
                    )
                )
            )
    policy_data = draw(st.dictionaries(st.sampled_from(["p", "q"]), json_values, max_size=2))
    return pods, containers, policy_data


@given(cache_states(), st.none() | st.dictionaries(st.text(max_size=4), json_values, max_size=3))
def test_restore_of_snapshot_is_identity(
    state: tuple[list[Pod], list[Container], dict[str, Any]], config: dict[str, Any] | None
) -> None:
    pods, containers, policy_data = state
    cache = Cache()
    cache.replace_all(pods, containers, policy_data)
    snapshot = Snapshot(
        version=1,
        policy="p",
        pods=tuple(cache.pods()),
        containers=tuple(cache.containers()),
        policy_data=cache.all_policy_data(),
        config=config,
    )
    text = json.dumps(unstructure_snapshot(snapshot))  # must be plain JSON
    restored = structure_snapshot(json.loads(text))
    assert restored == snapshot
    again = Cache()
    again.replace_all(restored.pods, restored.containers, restored.policy_data)
    assert again.pods() == cache.pods()
    assert again.containers() == cache.containers()
    assert again.all_policy_data() == cache.all_policy_data()
    for pod in pods:
        assert [c.id for c in again.containers_of(pod.id)] == [
            c.id for c in cache.containers_of(pod.id)
        ]


def _valid() -> dict[str, Any]:
    pod = Pod(id="p1", name="web", cgroup_parent="/kubepods/pod1")
    ctr = Container(id="c1", pod_id="p1", name="app", resources=LinuxResources(cpus=CPUSet.of(1)))
    return unstructure_snapshot(
        Snapshot(version=1, policy="template", pods=(pod,), containers=(ctr,))
    )


def test_valid_document_loads() -> None:
    snap = structure_snapshot(_valid())
    assert snap.containers[0].cpus == CPUSet.of(1)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(version=2), "unsupported state version 2"),
        (lambda d: d.pop("version"), "unsupported state version None"),
        (lambda d: d.update(extra=1), "unknown field(s) extra @ state"),
        (
            lambda d: d["containers"][0].update(bogus=1),
            "unknown field(s) bogus @ state.containers[0]",
        ),
        (
            lambda d: d["containers"][0].update(state="zombie"),
            "'zombie' is not a valid ContainerState @ state.containers[0].state",
        ),
        (
            lambda d: d["containers"][0]["resources"].update(cpus="3-1"),
            "reversed range '3-1' @ state.containers[0].resources.cpus",
        ),
        (
            lambda d: d["containers"][0]["resources"].update(cpu_shares="1024"),
            "invalid value '1024': expected int @ state.containers[0].resources.cpu_shares",
        ),
        (
            lambda d: d["pods"][0].update(labels={"a": 1}),
            "invalid value 1: expected str @ state.pods[0].labels['a']",
        ),
        (lambda d: d["pods"][0].pop("id"), "required field missing @ state.pods[0].id"),
        (
            lambda d: d["containers"][0].update(pod_id="p9"),
            "state.containers[0].pod_id: unknown pod 'p9'",
        ),
        (lambda d: d["pods"].append(dict(d["pods"][0])), "duplicate pod ids"),
    ],
)
def test_bad_documents_are_refused_with_path_and_value(mutate: Any, expected: str) -> None:
    doc = _valid()
    mutate(doc)
    with pytest.raises(SnapshotError) as info:
        structure_snapshot(doc)
    assert expected in str(info.value)


def test_all_problems_are_listed() -> None:
    doc = _valid()
    doc["containers"][0]["state"] = "zombie"
    doc["pods"][0]["name"] = 7
    with pytest.raises(SnapshotError) as info:
        structure_snapshot(doc)
    assert len(info.value.problems) == 2


def test_not_a_mapping() -> None:
    with pytest.raises(SnapshotError, match="not a mapping"):
        structure_snapshot([1, 2])


def _pod(name: str, generation: int = 0) -> Pod:
    return Pod(id=f"id-{name}", name=name, uid=f"uid-{name}", labels={"gen": str(generation)})


edits = st.lists(
    st.tuples(
        st.sampled_from(["change", "insert", "append", "remove", "none"]),
        st.integers(min_value=0, max_value=50),
    ),
    min_size=1,
    max_size=12,
)


@given(st.integers(min_value=0, max_value=8), st.lists(edits, min_size=1, max_size=6))
def test_encoder_output_matches_a_fresh_encoding_and_reuses_unchanged_parts(
    initial: int, rounds: list[list[tuple[str, int]]]
) -> None:
    encoder = SnapshotEncoder()
    pods = [_pod(f"p{i}") for i in range(initial)]
    counter = initial
    previous: list[tuple[Pod, dict[str, Any]]] = []
    for round_edits in rounds:
        for kind, at in round_edits:
            i = at % len(pods) if pods else 0
            if kind == "change" and pods:
                pods[i] = _pod(pods[i].name, int(pods[i].labels["gen"]) + 1)
            elif kind == "insert":
                pods.insert(i, _pod(f"p{counter}"))
                counter += 1
            elif kind == "append":
                pods.append(_pod(f"p{counter}"))
                counter += 1
            elif kind == "remove" and pods:
                del pods[i]
        snapshot = Snapshot(version=SNAPSHOT_VERSION, policy="p", pods=tuple(pods))
        encoded = encoder.encode(snapshot)
        assert encoded == unstructure_snapshot(snapshot)
        current = list(zip(pods, encoded["pods"], strict=True))
        for (pod, part), (old_pod, old_part) in zip(current, previous, strict=False):
            if pod is old_pod:  # unchanged in its place since the last call: the same dict
                assert part is old_part
        previous = current
        assert structure_snapshot(json.loads(json.dumps(encoded))).pods == tuple(pods)


def test_encoder_never_modifies_what_it_returned() -> None:
    encoder = SnapshotEncoder()
    pods = [_pod("a"), _pod("b"), _pod("c")]
    first = encoder.encode(Snapshot(version=SNAPSHOT_VERSION, policy="p", pods=tuple(pods)))
    kept = json.dumps(first)
    for later in ([_pod("a", 1), pods[1], pods[2]], [pods[2]], [*pods, _pod("d")]):
        encoder.encode(Snapshot(version=SNAPSHOT_VERSION, policy="p", pods=tuple(later)))
        assert json.dumps(first) == kept


def test_encoder_reuses_the_parts_of_objects_that_moved() -> None:
    encoder = SnapshotEncoder()
    pods = [_pod(name) for name in "abcde"]
    first = encoder.encode(Snapshot(version=SNAPSHOT_VERSION, policy="p", pods=tuple(pods)))
    del pods[1]  # c, d and e move up one place
    second = encoder.encode(Snapshot(version=SNAPSHOT_VERSION, policy="p", pods=tuple(pods)))
    assert [p["name"] for p in second["pods"]] == ["a", "c", "d", "e"]
    assert all(
        a is b for a, b in zip(second["pods"], first["pods"][:1] + first["pods"][2:], strict=True)
    )


def test_encoded_later_is_encoded_once_on_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = SnapshotEncoder()
    calls: list[Snapshot] = []
    encode = encoder._encode_locked

    def counting(snapshot: Snapshot) -> dict[str, Any]:
        calls.append(snapshot)
        return encode(snapshot)

    monkeypatch.setattr(encoder, "_encode_locked", counting)
    pods = (_pod("a"), _pod("b"))
    later = encoder.later(Snapshot(version=SNAPSHOT_VERSION, policy="p", pods=pods))
    assert calls == []  # nothing is unstructured until someone reads it
    assert later["pods"][1]["name"] == "b"
    assert dict(later) == unstructure_snapshot(Snapshot(SNAPSHOT_VERSION, "p", pods))
    assert len(later) == 6 and later == dict(later)
    assert len(calls) == 1


def test_encoded_later_read_from_threads_at_once_is_encoded_once() -> None:
    encoder = SnapshotEncoder()
    pods = tuple(_pod(f"p{i}") for i in range(300))
    later = encoder.later(Snapshot(version=SNAPSHOT_VERSION, policy="p", pods=pods))
    seen: list[Any] = []
    start = threading.Barrier(4)

    def read() -> None:
        start.wait()
        seen.append(later["pods"])

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4 and all(part is seen[0] for part in seen)
    assert [p["name"] for p in seen[0]] == [f"p{i}" for i in range(300)]


def test_later_snapshots_read_out_of_order_are_still_exact() -> None:
    """A store may skip snapshots (it keeps only the latest) or read an older one after a
    newer one: each is encoded from its own objects."""
    encoder = SnapshotEncoder()
    one = Snapshot(SNAPSHOT_VERSION, "p", pods=(_pod("a"), _pod("b")))
    two = Snapshot(SNAPSHOT_VERSION, "p", pods=(_pod("a", 1), _pod("b")))
    three = Snapshot(SNAPSHOT_VERSION, "p", pods=(_pod("b"),))
    first, second, third = encoder.later(one), encoder.later(two), encoder.later(three)
    assert dict(third) == unstructure_snapshot(three)
    assert dict(first) == unstructure_snapshot(one)
    assert dict(second) == unstructure_snapshot(two)


_CHANGES = st.sampled_from(
    ["cpus", "mems", "both", "same", "tags", "state", "host", "clear", "env"]
)


@settings(max_examples=150)
@given(st.lists(st.tuples(_CHANGES, st.integers(0, 5), st.integers(0, 3)), min_size=1, max_size=30))
def test_changed_containers_are_encoded_from_their_previous_form_exactly(
    edits: list[tuple[str, int, int]],
) -> None:
    """New versions of containers reuse the unstructured fields of their previous versions;
    the result must be what unstructuring them afresh gives, keys in the same order."""
    pod = _pod("p")
    base = Container(
        id="c",
        pod_id=pod.id,
        name="c",
        labels={"app": "x"},
        resources=LinuxResources(cpu_shares=2, cpu_period=100_000, memory_limit=1 << 30),
        tags={"pool": "a"},
    )
    containers = [attrs.evolve(base, id=f"c{i}", name=f"c{i}") for i in range(6)]
    sets = [CPUSet.parse(t) for t in ("0-3", "4-7", "0-63,128-191", "5")]
    encoder = SnapshotEncoder()
    for kind, at, which in edits:
        ctr = containers[at]
        if kind in ("cpus", "both"):
            ctr = ctr.with_cpus(sets[which])
        if kind in ("mems", "both"):
            ctr = ctr.with_mems(CPUSet.of(which))
        if kind == "same":
            ctr = ctr.with_resources(LinuxResources(cpus=ctr.cpus))
        elif kind == "tags":
            ctr = ctr.with_tags(pool=str(which))
        elif kind == "state":
            ctr = ctr.with_state(list(ContainerState)[which])
        elif kind == "host":
            ctr = ctr.with_host_change(HostChange(cgroup={"memory.high": str(which)}))
        elif kind == "clear":
            ctr = ctr.without_pending("runtime").without_pending("host")
        elif kind == "env":
            ctr = attrs.evolve(ctr, state=ContainerState.CREATING).with_creation_extras(
                env={"N": str(which)}
            )
        containers[at] = ctr
        snapshot = Snapshot(SNAPSHOT_VERSION, "p", pods=(pod,), containers=tuple(containers))
        encoded = encoder.encode(snapshot)
        fresh = unstructure_snapshot(snapshot)
        assert encoded == fresh
        assert json.dumps(encoded) == json.dumps(fresh)  # the same key order, too
    assert structure_snapshot(json.loads(json.dumps(encoded))).containers == tuple(containers)


def test_forms_show_labels_and_mount_options_without_copying_them() -> None:
    """A form holds the dict a container's read-only labels show and its mounts' own option
    tuples (a snapshot of a thousand containers would copy thousands); the JSON is the same."""
    mount = Mount(destination="/data", source="/srv", options=("rbind", "rw"))
    ctr = Container(id="c", pod_id="p", labels={"app": "web"}, mounts=(mount,))
    pod = Pod(id="p", annotations={"a": "b"})
    snapshot = Snapshot(version=1, policy="p", pods=(pod,), containers=(ctr,))
    first, second = unstructure_snapshot(snapshot), unstructure_snapshot(snapshot)
    assert first["containers"][0]["labels"] == {"app": "web"}
    assert first["containers"][0]["labels"] is second["containers"][0]["labels"]
    assert first["pods"][0]["annotations"] is second["pods"][0]["annotations"]
    assert first["containers"][0]["mounts"][0]["options"] is mount.options
    assert json.loads(json.dumps(first))["containers"][0]["mounts"][0]["options"] == ["rbind", "rw"]
    assert structure_snapshot(json.loads(json.dumps(first))) == snapshot
