"""What topology hints cost per container.

Times, per call, on a kubelet-like container (the twelve mounts containerd gives every
container, of which only /dev/shm is looked up on the host) with one device:

* ``SysfsTopologyHints`` on this host's ``/sys`` (device: the first block device listed in
  ``/sys/dev/block``; mount sources are ``stat()``-ed);
* ``SysfsTopologyHints`` on the ``server-4s-144`` tree (GPU 226:0, host paths not resolved);
* ``FakeTopologyHints`` for the same machine;
* ``select_hints`` with an allow and a deny glob;
* ``PolicyContext.topology_hints`` once cached (what a policy pays per extra call).

    .venv/bin/python bench/bench_topology_hints.py [--calls 20000]

Prints the best of five runs per call, in microseconds.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import timeit
from collections.abc import Callable

from nrirp.adapters.documents import YamlAnnotationParser
from nrirp.adapters.fakehw import FakeTopologyHints, load_machine, resolve, write_sysfs
from nrirp.adapters.memory import FakeClock
from nrirp.adapters.sysfs import SysfsTopologyHints
from nrirp.domain.cache import Cache
from nrirp.domain.model import AnnotationReader, Container, Device, Mount, Pod
from nrirp.domain.policy import PolicyContext
from nrirp.domain.topology import select_hints

KUBELET_MOUNTS = (
    Mount("/proc", "proc", "proc", ("nosuid", "noexec", "nodev")),
    Mount("/dev", "tmpfs", "tmpfs", ("nosuid", "strictatime", "mode=755")),
    Mount("/dev/pts", "devpts", "devpts", ("nosuid", "noexec")),
    Mount("/dev/mqueue", "mqueue", "mqueue", ("nosuid", "noexec", "nodev")),
    Mount("/sys", "sysfs", "sysfs", ("nosuid", "noexec", "nodev", "ro")),
    Mount("/sys/fs/cgroup", "cgroup", "cgroup", ("nosuid", "noexec", "nodev", "ro")),
    Mount("/etc/hosts", "/var/lib/kubelet/pods/u/etc-hosts", "bind", ("rbind", "rw")),
    Mount("/dev/termination-log", "/var/lib/kubelet/pods/u/c/x", "bind", ("rbind", "rw")),
    Mount("/etc/hostname", "/var/lib/containerd/s/hostname", "bind", ("rbind", "rw")),
    Mount("/etc/resolv.conf", "/var/lib/containerd/s/resolv.conf", "bind", ("rbind", "rw")),
    Mount("/dev/shm", "/dev/shm", "bind", ("rbind", "rw")),
    Mount("/var/run/secrets/kubernetes.io/serviceaccount", "/var/lib/k/t", "bind", ("ro",)),
)


def best(fn: Callable[[], object], calls: int) -> float:
    return min(timeit.repeat(fn, number=calls, repeat=5)) / calls * 1e6


ANNOTATIONS = YamlAnnotationParser()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    calls = parser.parse_args().calls

    host_block = sorted(os.listdir("/sys/dev/block"))[0]
    major, minor = map(int, host_block.split(":"))
    host_ctr = Container(
        id="c", pod_id="p", mounts=KUBELET_MOUNTS, devices=(Device("/dev/x", "b", major, minor),)
    )
    gpu_ctr = Container(
        id="c", pod_id="p", mounts=KUBELET_MOUNTS, devices=(Device("/dev/dri/card0", "c", 226, 0),)
    )
    layout = resolve(load_machine("server-4s-144"))
    with tempfile.TemporaryDirectory() as tmp:
        write_sysfs(layout, tmp + "/sys")
        host = SysfsTopologyHints("/sys")
        tree = SysfsTopologyHints(tmp + "/sys")
        fake = FakeTopologyHints.from_layout(layout)
        found = tree.hints(gpu_ctr)
        reader = AnnotationReader(
            {
                "allow.topologyhints.resource-policy.nri.io": "/sys/devices/pci0000:*",
                "deny.topologyhints.resource-policy.nri.io": "/dev/sd*",
            },
            "app",
        )
        cache = Cache()
        cache.put_pod(Pod(id="p", name="web", uid="u", namespace="default"))
        cache.put_container(gpu_ctr)
        ctx = PolicyContext(
            cache=cache,
            machine=None,  # type: ignore[arg-type]  # not used by topology_hints
            clock=FakeClock(),
            inject=lambda event: None,
            decide=lambda c, r, ok: None,
            notify=lambda m, s, c: None,
            hints=tree,
            annotation_parser=ANNOTATIONS,
        )
        ctx.topology_hints(gpu_ctr)
        rows: list[tuple[str, Callable[[], object]]] = [
            (
                f"sysfs /sys (block {host_block}, {len(host.hints(host_ctr))} hint)",
                lambda: host.hints(host_ctr),
            ),
            (f"sysfs tree server-4s-144 ({len(found)} hint)", lambda: tree.hints(gpu_ctr)),
            ("fake server-4s-144", lambda: fake.hints(gpu_ctr)),
            ("select_hints (allow + deny globs)", lambda: select_hints(found, reader, ANNOTATIONS)),
            ("PolicyContext.topology_hints (cached)", lambda: ctx.topology_hints(gpu_ctr)),
        ]
        for label, fn in rows:
            print(f"{label:<44} {best(fn, calls):8.2f} us")
        ctx.take_annotation_problems()


if __name__ == "__main__":
    main()
