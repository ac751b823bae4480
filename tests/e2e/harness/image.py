"""A tiny busybox OCI image archive built in Python, and its import into containerd.

No registry is reachable, so the image is written locally: one uncompressed layer with
``/bin/busybox``, a symlink per applet, ``/etc/passwd`` and ``/etc/group``; a config whose Cmd is an
idle loop that behaves as PID 1 (exits on SIGTERM); a manifest; and an ``index.json`` naming the tag
via ``io.containerd.image.name`` so ``ctr images import`` registers it. The same image serves as
the pod sandbox ("pause") image. Output is byte-for-byte reproducible.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import attrs

IMAGE_REF = "localhost/nrirp/busybox:e2e"
IDLE_LOOP = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"
IDLE_CMD = ("/bin/sh", "-c", IDLE_LOOP)
ENV_PATH = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
CREATED = "2024-01-01T00:00:00Z"
_EPOCH = 1704067200  # CREATED as a unix time: fixed so the digests never change

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar"

PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
_DIRS = {
    "bin": 0o755,
    "dev": 0o755,
    "etc": 0o755,
    "proc": 0o555,
    "root": 0o700,
    "sbin": 0o755,
    "sys": 0o555,
    "tmp": 0o1777,
    "usr": 0o755,
    "usr/bin": 0o755,
    "usr/sbin": 0o755,
    "var": 0o755,
}

_GOARCH = {
    "x86_64": "amd64",
    "aarch64": "arm64",
    "armv7l": "arm",
    "i686": "386",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
}


class ImageError(RuntimeError):
    """Building or importing the test image failed."""


@attrs.frozen
class ImageArchive:
    """An OCI image archive on disk and the reference it is imported under."""

    path: Path
    ref: str
    manifest_digest: str


def oci_architecture(machine: str | None = None) -> str:
    """The OCI/Go architecture name of this host (``x86_64`` -> ``amd64``)."""
    machine = machine or platform.machine()
    try:
        return _GOARCH[machine]
    except KeyError as exc:
        raise ImageError(f"no OCI architecture known for machine {machine!r}") from exc


def busybox_applets(busybox: Path) -> list[str]:
    """Applet paths relative to / (``usr/bin/awk``) from ``busybox --list-full``."""
    proc = subprocess.run(
        [str(busybox), "--list-full"], capture_output=True, text=True, timeout=30, check=False
    )
    if proc.returncode != 0:
        raise ImageError(f"{busybox} --list-full failed: {proc.stderr.strip()}")
    return sorted({line.strip().lstrip("/") for line in proc.stdout.splitlines() if line.strip()})


def _add(tar: tarfile.TarFile, info: tarfile.TarInfo, data: bytes | None = None) -> None:
    info.mtime = _EPOCH
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if data is not None:
        info.size = len(data)
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def build_layer(busybox_binary: bytes, applets: list[str]) -> bytes:
    """The image's only layer as an uncompressed tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, mode in _DIRS.items():
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            _add(tar, info)
        info = tarfile.TarInfo("bin/busybox")
        info.mode = 0o755
        _add(tar, info, busybox_binary)
        for name, text in (("etc/passwd", PASSWD), ("etc/group", GROUP)):
            info = tarfile.TarInfo(name)
            info.mode = 0o644
            _add(tar, info, text.encode())
        for applet in applets:
            if applet == "bin/busybox" or applet.rsplit("/", 1)[0] not in _DIRS:
                continue
            info = tarfile.TarInfo(applet)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, "/bin/busybox", 0o777
            _add(tar, info)
    return buf.getvalue()


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def build_oci_archive(
    busybox: Path, out: Path, ref: str = IMAGE_REF, architecture: str | None = None
) -> ImageArchive:
    """Write the busybox image as an OCI layout tar to ``out``."""
    arch = architecture or oci_architecture()
    layer_digest, layer = _blob(build_layer(busybox.read_bytes(), busybox_applets(busybox)))
    config_digest, config = _blob(
        _json(
            {
                "architecture": arch,
                "os": "linux",
                "created": CREATED,
                "config": {"Cmd": list(IDLE_CMD), "Env": [ENV_PATH], "WorkingDir": "/"},
                "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
                "history": [{"created": CREATED, "created_by": "nrirp e2e harness"}],
            }
        )
    )
    manifest_digest, manifest = _blob(
        _json(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_MANIFEST,
                "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": len(config)},
                "layers": [{"mediaType": MEDIA_LAYER, "digest": layer_digest, "size": len(layer)}],
            }
        )
    )
    index = _json(
        {
            "schemaVersion": 2,
            "mediaType": MEDIA_INDEX,
            "manifests": [
                {
                    "mediaType": MEDIA_MANIFEST,
                    "digest": manifest_digest,
                    "size": len(manifest),
                    "platform": {"architecture": arch, "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": ref,
                        "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[-1],
                    },
                }
            ],
        }
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entries = [
            ("oci-layout", _json({"imageLayoutVersion": "1.0.0"})),
            ("index.json", index),
        ] + [
            ("blobs/sha256/" + digest.split(":", 1)[1], data)
            for digest, data in (
                (layer_digest, layer),
                (config_digest, config),
                (manifest_digest, manifest),
            )
        ]
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.mode = 0o644
            _add(tar, info, data)
    return ImageArchive(path=out, ref=ref, manifest_digest=manifest_digest)


def import_image(
    ctr: Path, address: Path, archive: ImageArchive, namespace: str = "k8s.io"
) -> None:
    """``ctr -a ADDRESS -n k8s.io images import ARCHIVE`` (unpacks into the default snapshotter)."""
    args = [str(ctr), "-a", str(address), "-n", namespace, "images", "import", str(archive.path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise ImageError(
            f"{' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
