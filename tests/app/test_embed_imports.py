"""The embedding API stands without NRI: importing it, or running an engine through it, loads
neither the NRI adapters, the simulated runtime, the simulator, the daemon nor protobuf
(checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest

NOT_LOADED = (
    "nrirp.adapters.nri",
    "nrirp.simruntime",
    "nrirp.app.simulator",
    "nrirp.app.daemon",
    "google.protobuf",
    "grpc",
)

ENGINE_RUN = """
import nrirp
from nrirp.adapters.fakehw import expected_machine, load_machine

updates = []
machine = expected_machine(load_machine("box-16"))
engine = nrirp.Engine.build("template", runtime_updates=updates.extend, machine=machine)
named = nrirp.Engine.build("template", runtime_updates=updates.extend, machine="box-16")
assert named.machine == machine
engine.start()
app = {"name": "app", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
kube = nrirp.KubernetesPod.from_manifest({
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
    "spec": {"containers": [app]},
})
pod = kube.sandbox("sb")
engine.run_pod_sandbox(pod)
ctr = kube.container("app", "c1", sandbox_id="sb", memory_capacity=engine.memory_capacity)
engine.create_container(pod, ctr)
engine.close()
"""


def loaded_modules(code: str) -> list[str]:
    listing = "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code + listing],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize(
    "code",
    ["import nrirp.app.embed", "import nrirp\nnrirp.Engine, nrirp.KubernetesPod", ENGINE_RUN],
    ids=["import", "package-attributes", "engine-run"],
)
def test_the_embedding_api_loads_no_nri_and_no_protobuf(code: str) -> None:
    modules = loaded_modules(code)
    assert "nrirp.app.embed" in modules  # the code did load the embedding API
    offending = [m for m in modules if any(m == p or m.startswith(p + ".") for p in NOT_LOADED)]
    assert offending == []


def test_the_check_sees_nri_when_it_is_loaded() -> None:
    # the listing is taken after the code ran: an NRI import shows up
    modules = loaded_modules("import nrirp.app.embed\nimport nrirp.simruntime")
    assert "nrirp.simruntime" in modules and "google.protobuf" in modules
    assert "nrirp.app.simulator" in loaded_modules("import nrirp.app.simulator")
