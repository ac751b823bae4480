"""NRI v0.1 test helpers: requests shaped like containerd 1.6's, and fake cgroup trees.

``V01Pod`` writes the requests containerd 1.6's CRI plugin makes for a pod (sandbox_run.go,
container_start.go, WithNRISandboxDelete): ids, pids, the sandbox's labels, the OCI spec's
resources (from nrirp's kubelet arithmetic), cgroups paths and CRI annotations, with pod
annotations passed through (``pod_annotations = ["*"]``). ``CgroupTree`` lays out container
cgroups under a temporary cgroup root, v1 (hybrid) or v2, so the cgroupfs writes land in files.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import attrs

from nrirp.adapters.nri_v01.protocol import CREATE, DELETE, Request, Spec
from nrirp.domain.model import CgroupDriver
from nrirp.domain.model.kubelet import (
    cgroups_path,
    container_resources,
    pod_cgroup_parent,
)
from nrirp.domain.model.pod_spec import PodSpec

SANDBOX_SHARES = 2

V1_FILES = {
    "cpuset": ["cpuset.cpus", "cpuset.mems"],
    "cpu,cpuacct": ["cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us"],
    "memory": ["memory.limit_in_bytes", "memory.soft_limit_in_bytes"],
    "pids": ["pids.max"],
}
V2_FILES = ["cpuset.cpus", "cpuset.mems", "cpu.weight", "cpu.max", "memory.max", "pids.max"]
V1_FILE_HIERARCHY = {name: h for h, names in V1_FILES.items() for name in names}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def oci_resources(settings: Any) -> dict[str, object]:
    """OCI ``linux.resources`` JSON of domain resources (what runc would be given)."""
    cpu: dict[str, object] = {}
    if settings.cpu_shares is not None:
        cpu["shares"] = settings.cpu_shares
    if settings.cpu_quota is not None:
        cpu["quota"] = settings.cpu_quota
    if settings.cpu_period is not None:
        cpu["period"] = settings.cpu_period
    if settings.cpus is not None:
        cpu["cpus"] = str(settings.cpus)
    if settings.mems is not None:
        cpu["mems"] = str(settings.mems)
    out: dict[str, object] = {"devices": [{"allow": False, "access": "rwm"}], "cpu": cpu}
    if settings.memory_limit is not None:
        out["memory"] = {"limit": settings.memory_limit}
    if settings.hugepage_limits:
        out["hugepageLimits"] = [
            {"pageSize": size, "limit": limit} for size, limit in settings.hugepage_limits.items()
        ]
    return out


@attrs.frozen
class V01Pod:
    """One pod's v0.1 requests."""

    spec: PodSpec
    uid: str
    sandbox_id: str
    driver: CgroupDriver = CgroupDriver.CGROUPFS
    conf: dict[str, object] | None = None
    pid_base: int = 4000

    @classmethod
    def of(
        cls,
        spec: PodSpec,
        serial: int = 0,
        *,
        driver: CgroupDriver = CgroupDriver.CGROUPFS,
        conf: dict[str, object] | None = None,
    ) -> V01Pod:
        h = _digest("uid", spec.namespace, spec.name, str(serial))
        uid = spec.uid or f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        return cls(spec, uid, _digest("sandbox", uid), driver, conf, 4000 + 10 * serial)

    @property
    def cgroup_parent(self) -> str:
        return pod_cgroup_parent(self.spec.qos, self.uid, self.driver)

    def container_id(self, name: str) -> str:
        return _digest("container", self.sandbox_id, name)

    def cgroups_path(self, name: str | None = None) -> str:
        """The container's (or, without a name, the sandbox's) cgroups path."""
        object_id = self.sandbox_id if name is None else self.container_id(name)
        return cgroups_path(self.cgroup_parent, object_id, self.driver)

    @property
    def labels(self) -> dict[str, str]:
        return {
            **self.spec.labels,
            "io.kubernetes.pod.name": self.spec.name,
            "io.kubernetes.pod.namespace": self.spec.namespace,
            "io.kubernetes.pod.uid": self.uid,
        }

    def _cri(self, kind: str) -> dict[str, str]:
        return {
            "io.kubernetes.cri.container-type": kind,
            "io.kubernetes.cri.sandbox-id": self.sandbox_id,
            "io.kubernetes.cri.sandbox-name": self.spec.name,
            "io.kubernetes.cri.sandbox-namespace": self.spec.namespace,
            "io.kubernetes.cri.sandbox-uid": self.uid,
        }

    def sandbox(self, state: str = CREATE) -> Request:
        annotations = {
            **self._cri("sandbox"),
            "io.kubernetes.cri.sandbox-log-directory": f"/var/log/pods/{self.uid}",
            **self.spec.annotations,
        }
        return Request(
            state,
            self.sandbox_id,
            sandbox_id=self.sandbox_id,
            pid=self.pid_base,
            spec=Spec(
                resources={"cpu": {"shares": SANDBOX_SHARES}},
                cgroups_path=self.cgroups_path(),
                annotations=annotations,
                namespaces={"pid": "", "ipc": "", "uts": "", "mount": ""},
            ),
            labels=self.labels if state == CREATE else {},
            conf=self.conf,
        )

    def container(self, name: str, state: str = CREATE) -> Request:
        index, ctr = next((i, c) for i, c in enumerate(self.spec.containers) if c.name == name)
        annotations = {
            **self._cri("container"),
            "io.kubernetes.cri.container-name": name,
            "io.kubernetes.cri.image-name": ctr.image,
            **self.spec.annotations,
            **ctr.annotations,
        }
        from nrirp.domain.cpuset import CPUSet

        settings = container_resources(
            ctr.resources,
            cpus=CPUSet.parse(ctr.cpuset_cpus) if ctr.cpuset_cpus else None,
            mems=CPUSet.parse(ctr.cpuset_mems) if ctr.cpuset_mems else None,
        )
        return Request(
            state,
            self.container_id(name),
            sandbox_id=self.sandbox_id,
            pid=self.pid_base + 1 + index,
            spec=Spec(
                resources=oci_resources(settings),
                cgroups_path=self.cgroups_path(name),
                annotations=annotations,
            ),
            labels=self.labels if state == CREATE else {},
            conf=self.conf,
        )

    def creates(self) -> list[Request]:
        """Sandbox, then every container, as containerd starts them."""
        return [self.sandbox(), *(self.container(c.name) for c in self.spec.containers)]

    def deletes(self) -> list[Request]:
        """Every container's task deleted, then the sandbox's."""
        return [
            *(self.container(c.name, DELETE) for c in self.spec.containers),
            self.sandbox(DELETE),
        ]


class CgroupTree:
    """Container cgroups under ``root`` laid out like a v1 (hybrid) or v2 host."""

    def __init__(self, root: Path, version: str = "v1") -> None:
        self.root = root
        self.version = version
        root.mkdir(parents=True, exist_ok=True)
        if version == "v2":
            (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        else:
            for hierarchy in V1_FILES:
                (root / hierarchy).mkdir(exist_ok=True)
            if not (root / "cpu").exists():
                (root / "cpu").symlink_to(root / "cpu,cpuacct")
            (root / "unified").mkdir(exist_ok=True)
            (root / "unified" / "cgroup.controllers").write_text("")

    @staticmethod
    def relative(cgroups_path: str) -> str:
        from nrirp.adapters.cgroups import container_cgroup_path
        from nrirp.domain.ports.host_control import HostTarget

        return container_cgroup_path(HostTarget("x", "p", "", cgroups_path)).lstrip("/")

    def _dirs(self, cgroups_path: str) -> list[tuple[Path, list[str]]]:
        relative = self.relative(cgroups_path)
        if self.version == "v2":
            return [(self.root / relative, V2_FILES)]
        return [(self.root / h / relative, names) for h, names in V1_FILES.items()]

    def add(self, cgroups_path: str) -> None:
        for directory, names in self._dirs(cgroups_path):
            directory.mkdir(parents=True, exist_ok=True)
            for name in names:
                (directory / name).touch()

    def remove(self, cgroups_path: str) -> None:
        for directory, names in self._dirs(cgroups_path):
            for name in names:
                (directory / name).unlink(missing_ok=True)
            directory.rmdir()

    def read(self, cgroups_path: str, name: str) -> str:
        relative = self.relative(cgroups_path)
        if self.version == "v2":
            return (self.root / relative / name).read_text().strip()
        return (self.root / V1_FILE_HIERARCHY[name] / relative / name).read_text().strip()

    def cpus(self, cgroups_path: str) -> str:
        return self.read(cgroups_path, "cpuset.cpus")

    def add_pod(self, pod: V01Pod) -> None:
        """The cgroups runc creates for the pod's sandbox and containers."""
        self.add(pod.cgroups_path())
        for ctr in pod.spec.containers:
            self.add(pod.cgroups_path(ctr.name))
