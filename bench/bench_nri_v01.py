#!/usr/bin/env python3
"""Wall time per invocation of the NRI v0.1 exec plugin (``nrirp-nri-v01 invoke``), p50/p99.

Each invocation is a new process, as the runtime runs it: the thin client forwarding to a
running ``nrirp run --nri-v01`` (daemon path) and the client deciding alone from the state
file (standalone path), for ``create`` and ``delete`` of containers, on the fake box-16 with
the topology-aware policy and a temporary cgroup tree. Target: p50 under 50 ms (the runtime
waits for the plugin on every container start). The machine is shared and noisy: compare
runs made side by side, and look at p50 before p99.

    .venv/bin/python bench/bench_nri_v01.py [--pods 40]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.nri_v01 import CgroupTree, V01Pod  # noqa: E402

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs  # noqa: E402
from nrirp.adapters.nri_v01.protocol import Request  # noqa: E402
from nrirp.domain.model import Resources  # noqa: E402
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec  # noqa: E402

EXEC = shutil.which("nrirp-nri-v01", path=os.path.dirname(sys.executable))


def invoke(request: Request) -> float:
    data = request.to_json().encode()
    start = time.perf_counter()
    proc = subprocess.run([EXEC or "nrirp-nri-v01", "invoke"], input=data, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"invocation failed: {proc.stdout.decode()} {proc.stderr.decode()}")
    return elapsed


def pods(count: int, conf: dict[str, object]) -> list[V01Pod]:
    out = []
    for i in range(count):
        cpu = "1" if i % 4 == 0 else None  # some exclusive, most shared
        res = (
            Resources.of(
                requests={"cpu": cpu, "memory": "32Mi"}, limits={"cpu": cpu, "memory": "32Mi"}
            )
            if cpu
            else Resources()
        )
        out.append(V01Pod.of(PodSpec(f"p{i}", containers=(ContainerSpec("c", res),)), i, conf=conf))
    return out


def measure(mode: str, count: int, tmp: Path, sysfs: Path) -> dict[str, list[float]]:
    tree = CgroupTree(tmp / "cgroup", "v1")
    (tmp / "config.yaml").write_text("reservedResources: {cpu: 'cpuset:0'}\n")
    conf: dict[str, object] = {
        "socket": str(tmp / "engine.sock"),
        "mode": mode,
        "policy": "topology-aware",
        "configFile": str(tmp / "config.yaml"),
        "stateDir": str(tmp / "state"),
        "sysfsRoot": str(sysfs),
        "cgroupRoot": str(tree.root),
    }
    daemon = None
    if mode == "daemon":
        daemon = subprocess.Popen(
            [
                sys.executable, "-m", "nrirp", "run", "--nri-v01", "--policy", "topology-aware",
                "--config-file", str(tmp / "config.yaml"), "--engine-socket", str(conf["socket"]),
                "--state-dir", str(tmp / "state"), "--sysfs-root", str(sysfs),
                "--cgroup-root", str(tree.root), "--config-poll-interval", "0",
                "--disable-agent", "--log-level", "warning",
            ],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        while not os.path.exists(str(conf["socket"])):
            time.sleep(0.05)
    times: dict[str, list[float]] = {"create": [], "delete": []}
    try:
        workload = pods(count, conf)
        for pod in workload:
            tree.add_pod(pod)
            invoke(pod.sandbox())
            times["create"].append(invoke(pod.container("c")))
        for pod in workload:
            times["delete"].append(invoke(pod.container("c", "delete")))
            invoke(pod.sandbox("delete"))
    finally:
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(20)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=40)
    opts = parser.parse_args()
    # the runtime runs an installed package, whose bytecode pip compiled: do the same here
    compileall.compile_dir(str(ROOT / "src" / "nrirp"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        sysfs = Path(tmp) / "sys"
        write_sysfs(resolve(load_machine("box-16"), "box-16"), sysfs)
        bare = []
        for _ in range(20):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append(time.perf_counter() - start)
        print(f"python -c pass (floor): p50 {statistics.median(bare) * 1e3:.1f} ms")
        print(f"{'path':<11} {'op':<7} {'n':>4} {'p50 ms':>8} {'p99 ms':>8}")
        for mode in ("daemon", "standalone"):
            times = measure(mode, opts.pods, Path(tmp) / mode, sysfs)
            for op, values in times.items():
                values.sort()
                p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
                print(
                    f"{mode:<11} {op:<7} {len(values):>4} "
                    f"{statistics.median(values) * 1e3:>8.1f} {p99 * 1e3:>8.1f}"
                )


if __name__ == "__main__":
    main()
