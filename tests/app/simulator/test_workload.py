"""The workload format: every key, kubelet's view of the pods, and errors with paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.app.simulator import WorkloadError, load_workload, parse_workload
from nrirp.app.simulator.workload import (
    CreatePod,
    DeletePod,
    Event,
    Reconfigure,
    RestartContainer,
    UpdateContainer,
)
from nrirp.domain.config.duration import Duration
from nrirp.domain.model import QOSClass
from nrirp.simruntime import Resources

EVERY_KEY = """
description: every key
steps:
  - note: first
    createPod:
      name: web
      namespace: prod
      uid: 0d9c7d1e-0000-4000-8000-000000000001
      labels: {app: web}
      annotations: {team: shop}
      runtimeHandler: runc
      containers:
        - name: app
          resources:
            requests: {cpu: 500m, memory: 64Mi}
            limits: {cpu: 1, memory: 128Mi, hugepages-2Mi: 4Mi}
          annotations: {cpus.example.io: "2-3"}
          cpusetCpus: 2-3
          cpusetMems: "0"
        - name: sidecar
  - deletePod: {name: web, namespace: prod}
  - updateContainer:
      pod: web
      namespace: prod
      container: app
      resources: {limits: {cpu: "2", memory: 1Gi}}
  - restartContainer: {pod: web, container: app}
  - reconfigure: {config: {reservedResources: {cpu: 750m}}}
  - reconfigure: {file: other.yaml}
  - event: {kind: rebalance, source: me, data: {x: [1, 2]}}
  - sleep: 250ms
  - expectError: true
    deletePod: {name: gone}
  - expectError: no pod sandbox
    deletePod: {name: gone}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(WorkloadError) as info:
        parse_workload(text, name="w.yaml")
    assert str(info.value).startswith("invalid workload w.yaml (")
    return [f"{path}: {message}" for path, message in info.value.problems]


def test_every_key_parses() -> None:
    workload = parse_workload(EVERY_KEY, name="w.yaml", base_dir="/srv")
    assert workload.description == "every key" and workload.base_dir == "/srv"
    assert [s.number for s in workload.steps] == list(range(1, 11))
    assert [s.kind for s in workload.steps] == [
        "createPod",
        "deletePod",
        "updateContainer",
        "restartContainer",
        "reconfigure",
        "reconfigure",
        "event",
        "sleep",
        "deletePod",
        "deletePod",
    ]
    create = workload.steps[0].action
    assert isinstance(create, CreatePod) and workload.steps[0].note == "first"
    spec = create.pod_spec()
    assert (spec.name, spec.namespace, spec.uid, spec.runtime_handler) == (
        "web",
        "prod",
        "0d9c7d1e-0000-4000-8000-000000000001",
        "runc",
    )
    # per-container annotations become pod annotations KEY/container.NAME
    assert spec.annotations == {"team": "shop", "cpus.example.io/container.app": "2-3"}
    app = spec.container("app")
    assert app.resources == Resources(500, 1000, 64 << 20, 128 << 20, {"2Mi": 4 << 20})
    assert (app.cpuset_cpus, app.cpuset_mems) == ("2-3", "0")
    assert spec.container("sidecar").resources == Resources()
    assert spec.qos is QOSClass.BURSTABLE
    assert workload.steps[1].action == DeletePod(name="web", namespace="prod")
    update = workload.steps[2].action
    assert isinstance(update, UpdateContainer)
    # the API server's defaulting: a missing request is the limit
    assert update.resources.resources == Resources(2000, 2000, 1 << 30, 1 << 30)
    assert workload.steps[3].action == RestartContainer(pod="web", container="app")
    assert workload.steps[3].action.namespace == "default"
    assert workload.steps[4].action == Reconfigure(config={"reservedResources": {"cpu": "750m"}})
    assert workload.steps[5].action == Reconfigure(file="other.yaml")
    assert workload.steps[6].action == Event(kind="rebalance", source="me", data={"x": [1, 2]})
    assert workload.steps[7].action == Duration.parse("250ms")
    assert workload.steps[8].expect_error is True
    assert workload.steps[9].expect_error == "no pod sandbox"


def test_a_bare_list_is_the_steps(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("- deletePod: {name: a}\n- sleep: 1s\n")
    workload = load_workload(str(path))
    assert [s.kind for s in workload.steps] == ["deletePod", "sleep"]
    assert workload.source == str(path) and workload.base_dir == str(tmp_path)


def test_qos_classes_follow_kubelet() -> None:
    def qos(containers: str) -> QOSClass:
        workload = parse_workload(f"- createPod: {{name: p, containers: {containers}}}")
        action = workload.steps[0].action
        assert isinstance(action, CreatePod)
        return action.pod_spec().qos

    assert qos("[{name: a}]") is QOSClass.BESTEFFORT
    assert qos("[{name: a, resources: {limits: {cpu: 1, memory: 1Gi}}}]") is QOSClass.GUARANTEED
    assert qos("[{name: a, resources: {limits: {cpu: 1}}}]") is QOSClass.BURSTABLE
    # one container without limits makes the pod Burstable
    assert qos("[{name: a, resources: {limits: {cpu: 1, memory: 1Gi}}}, {name: b}]") is (
        QOSClass.BURSTABLE
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "- createPod: {name: p, containers: [{name: a}], containerz: []}",
            "steps[0].createPod.containerz (step 1): unknown field",
        ),
        (
            "- createPod: {name: p, containers: [{name: a, resources: {limits: {cpu: abc}}}]}",
            "steps[0].createPod.containers[0].resources.limits.cpu (step 1): invalid value "
            "'abc': expected a quantity",
        ),
        (
            "- createPod: {name: p, containers: [{name: a, resources: {limits: {gpu: 1}}}]}",
            "steps[0].createPod.containers[0].resources.limits.gpu (step 1): unsupported resource",
        ),
        (
            "- createPod: {name: p, containers: [{name: a, resources: {limits: {cpu: -1}}}]}",
            "resources.limits.cpu (step 1): invalid value -1: must not be negative",
        ),
        (
            "- createPod: {name: p, containers: [{name: a, resources: {requests: {cpu: 2},"
            " limits: {cpu: 1}}}]}",
            "steps[0].createPod.containers[0].resources (step 1): requests.cpu 2 (2000m) "
            "exceeds limits.cpu 1 (1000m)",
        ),
        (
            "- createPod: {name: p, containers: [{name: a, resources: {request: {}}}]}",
            "containers[0].resources.request (step 1): unknown field",
        ),
        (
            "- createPod: {name: p, containers: [{name: a, cpusetCpus: '3-1'}]}",
            "steps[0].createPod.containers[0].cpusetCpus (step 1): invalid value '3-1'",
        ),
        ("- createPod: {name: p}", "steps[0].createPod.containers (step 1): a pod needs"),
        ("- createPod: {name: a/b, containers: [{name: c}]}", "createPod.name (step 1): invalid"),
        (
            "- createPod: {name: p, containers: [{name: c}, {name: c}]}",
            "steps[0].createPod.containers[1].name (step 1): duplicate container name 'c'",
        ),
        (
            "- createPod: {name: p, annotations: {k/container.c: x},"
            " containers: [{name: c, annotations: {k: y}}]}",
            "containers[0].annotations.k (step 1): the pod's annotations already have",
        ),
        (
            "- createPod: {name: p, containers: [{name: c, annotations: {k/container.c: y}}]}",
            "give the plain key",
        ),
        (
            "- createPod: {name: p, labels: {a: 1}, containers: [{name: c}]}",
            "steps[0].createPod.labels.a (step 1): invalid value 1: expected a string",
        ),
        ("- deletePod: {namespace: x}", "steps[0].deletePod.name (step 1): required field"),
        ("- {}", "steps[0] (step 1): expected exactly one of createPod, deletePod"),
        ("- {deletePod: {name: a}, sleep: 1s}", "got deletePod and sleep"),
        ("- deletepod: {name: a}", "steps[0].deletepod (step 1): unknown field"),
        ("- reconfigure: {}", "steps[0].reconfigure (step 1): give exactly one of"),
        ("- reconfigure: {config: [1]}", "steps[0].reconfigure.config (step 1): invalid value"),
        ("- sleep: 5", "steps[0].sleep (step 1): invalid value 5: expected a duration"),
        ("- sleep: 11m", "steps[0].sleep (step 1): invalid value '11m0s': expected 0 to 10m"),
        ("- event: {kind: ''}", "steps[0].event.kind (step 1): must not be empty"),
        ("- {sleep: 1s, expectError: false}", "steps[0].expectError (step 1): invalid value"),
        (
            "- sleep: 1s\n- sleep: 1s\n- updateContainer: {pod: p, container: c}",
            "steps[2].updateContainer.resources (step 3): required field missing",
        ),
        ("steps: []", "steps: the workload has no steps"),
        ("", "<document>: expected a list of steps or a mapping, got nothing"),
        ("- a: [", "<document>: invalid YAML at line"),
        ("{steps: [{sleep: 1s}], other: 1}", "other: unknown field"),
    ],
)
def test_errors_name_path_and_step(text: str, expected: str) -> None:
    found = problems(text)
    assert any(expected in p for p in found), found


def test_every_problem_is_listed() -> None:
    found = problems("- deletePod: {}\n- {sleep: x}\n- createPod: {name: p, bad: 1}")
    assert found == [
        "steps[0].deletePod.name (step 1): required field missing",
        "steps[1].sleep (step 2): invalid value 'x': expected a duration such as '30s', "
        "'1m30s' or '500ms'",
        "steps[2].createPod.bad (step 3): unknown field",
    ]


# ---------------------------------------------------------------------- properties
QUANTITY = st.one_of(
    st.integers(0, 64).map(str),
    st.integers(1, 64000).map(lambda m: f"{m}m"),
    st.integers(1, 4096).map(lambda m: f"{m}Mi"),
    st.integers(0, 8),
)
NAME = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)


@st.composite
def container_docs(draw: st.DrawFn, name: str) -> dict[str, Any]:
    limits = draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, max_size=2))
    doc: dict[str, Any] = {"name": name}
    if limits:
        doc["resources"] = {"limits": limits}
    return doc


@st.composite
def workloads(draw: st.DrawFn) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        names = draw(st.lists(NAME, min_size=1, max_size=3, unique=True))
        steps.append(
            {
                "createPod": {
                    "name": draw(NAME),
                    "containers": [draw(container_docs(n)) for n in names],
                }
            }
        )
    return steps


def _mappings(
    node: Any, path: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    if isinstance(node, dict):
        if path and path[-1] not in ("limits", "requests"):
            found.append((path, node))
        for key, value in node.items():
            found += _mappings(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _mappings(value, (*path, index))
    return found


def _path_text(path: tuple[Any, ...]) -> str:
    out = ""
    for seg in path:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else seg)
    return out


@settings(max_examples=60, deadline=None)
@given(workloads())
def test_generated_workloads_parse_like_kubelet_reads_them(steps: list[dict[str, Any]]) -> None:
    workload = parse_workload(yaml.safe_dump(steps))
    assert len(workload.steps) == len(steps)
    for step, doc in zip(workload.steps, steps, strict=True):
        action = step.action
        assert isinstance(action, CreatePod)
        for ctr, ctr_doc in zip(
            action.pod_spec().containers, doc["createPod"]["containers"], strict=True
        ):
            limits = ctr_doc.get("resources", {}).get("limits", {})
            assert ctr.resources == Resources.of(limits=limits)


@settings(max_examples=60, deadline=None)
@given(workloads(), st.data())
def test_an_unknown_key_anywhere_is_reported_at_its_path(
    steps: list[dict[str, Any]], data: st.DataObject
) -> None:
    path, mapping = data.draw(st.sampled_from(_mappings({"steps": steps})))
    mapping["surplus"] = 1
    expected = _path_text((*path, "surplus"))
    found = problems(yaml.safe_dump({"steps": steps}))
    assert any(p.startswith(expected + " ") and "unknown field" in p for p in found), found
