"""The embedding API refuses resources no runtime reports, naming the field, and leaves the
engine as it was; a container the engine missed is taken in by its update."""

from __future__ import annotations

import attrs
import pytest

from nrirp.adapters.memory import RecordingRuntimeUpdates
from nrirp.app.embed import Engine, KubernetesPod
from nrirp.domain.model import Container, LinuxResources, Pod
from nrirp.domain.pipeline import OperationFailedError


def engine() -> Engine:
    built = Engine.build(
        "topology-aware", runtime_updates=RecordingRuntimeUpdates(), machine="box-16"
    )
    built.start()
    return built


def web(eng: Engine) -> tuple[Pod, Container]:
    kube = KubernetesPod.from_manifest(
        {
            "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
            "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}]},
        }
    )
    sandbox = kube.sandbox("sb-web")
    app = kube.container("app", "ctr-app", pod_id=sandbox.id, memory_capacity=eng.memory_capacity)
    return sandbox, app


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"cpu_shares": -100}, "cpu_shares: -100 is negative"),
        ({"cpu_period": -1}, "cpu_period: -1 is negative"),
        ({"cpu_realtime_period": -5}, "cpu_realtime_period: -5 is negative"),
        ({"hugepage_limits": {"2MB": -1}}, "hugepage_limits['2MB']: -1 is negative"),
    ],
)
def test_negative_unsigned_resources_are_refused_naming_the_field(
    changes: dict[str, object], field: str
) -> None:
    eng = engine()
    sandbox, app = web(eng)
    eng.run_pod_sandbox(sandbox)
    bad = attrs.evolve(app, resources=attrs.evolve(app.resources, **changes))
    with pytest.raises(ValueError, match=f"container app.resources.{field}".replace("[", r"\[")):
        eng.create_container(sandbox, bad)
    assert eng.containers() == []  # nothing taken in
    with pytest.raises(ValueError, match="is negative"):
        eng.synchronize([sandbox], [bad])
    created = eng.create_container(sandbox, app)  # the engine goes on
    assert created.adjustment is not None
    with pytest.raises(ValueError, match=f"container app.resources.{field}".replace("[", r"\[")):
        eng.update_container(sandbox, app, attrs.evolve(LinuxResources(), **changes))
    bad_pod = attrs.evolve(sandbox, id="other", resources=LinuxResources(cpu_shares=-2))
    with pytest.raises(ValueError, match=r"pod default/web.resources.cpu_shares: -2 is negative"):
        eng.run_pod_sandbox(bad_pod)


def test_a_negative_quota_means_no_limit_and_is_kept() -> None:
    eng = engine()
    sandbox, app = web(eng)
    eng.run_pod_sandbox(sandbox)
    unlimited = attrs.evolve(app, resources=attrs.evolve(app.resources, cpu_quota=-1))
    assert eng.create_container(sandbox, unlimited).adjustment is not None


def test_an_update_of_a_container_the_engine_missed_takes_it_in() -> None:
    eng = engine()
    sandbox, app = web(eng)
    eng.run_pod_sandbox(sandbox)
    eng.update_container(sandbox, app, app.resources)
    assert [c.id for c in eng.containers()] == [app.id]
    with pytest.raises(OperationFailedError, match="already exists"):
        eng.create_container(sandbox, app)
