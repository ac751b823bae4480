"""Build the nrirp container image without pulling anything from an image registry.

::

    python -m tools.image.build [--output FILE] [--tag REF] [--lock] [--refresh-base]

Layers:

1. **base**: a minimal Debian bookworm root filesystem made by ``mmdebstrap`` (the Essential
   set plus ``tools/image/packages.txt``: Python 3.11), documentation and locales left out,
   every timestamp clamped to :data:`BASE_EPOCH`. Cached under ``$NRIRP_CACHE/image/`` by a key
   of the suite, the package list and the options; ``--refresh-base`` builds it again (to
   take Debian's updates).
2. **app**: nrirp's wheel and the pinned wheels of ``tools/image/requirements.txt`` installed
   into ``/usr/local/lib/python3.11/dist-packages``, byte-compiled (unchecked hashes: the image
   is immutable, and a read-only root needs no ``__pycache__`` writes), ``/usr/local/bin/nrirp``.
   Every entry has ``SOURCE_DATE_EPOCH`` (default: the last commit's time) as its time and
   root as its owner.

``umoci`` assembles the OCI layout (no history, fixed creation time); the result is an OCI
archive that ``ctr images import`` (or ``skopeo copy oci-archive:...``) takes, naming the
image ``--tag`` (default ``localhost/nrirp:<version>``). The same inputs give the same bytes:
the archive's sha256 is printed. mmdebstrap and umoci are Debian packages, fetched and
unpacked privately (``tests/support/debian.py``) like the end-to-end tests' tools.

Costs, measured on the 2-core VM: the base ~35-70 s once (then cached), the app layer and the
archive ~30-40 s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.support.debian import cache_root, debian_mirror, fetch  # noqa: E402

HERE = Path(__file__).resolve().parent
PACKAGES = HERE / "packages.txt"
REQUIREMENTS = HERE / "requirements.txt"
SUITE = "bookworm"
BASE_EPOCH = 1704067200  # 2024-01-01: the base layer does not change with each commit
PYTHON = "/usr/bin/python3.11"
SITE = "usr/local/lib/python3.11/dist-packages"
ENTRYPOINT = "usr/local/bin/nrirp"
DPKG_EXCLUDES = (
    "/usr/share/doc/*",
    "/usr/share/man/*",
    "/usr/share/info/*",
    "/usr/share/locale/*",
    "/usr/share/lintian/*",
)
ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
)


class ImageBuildError(RuntimeError):
    pass


def _run(args: list[str], **kw: object) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise ImageBuildError(
            f"{' '.join(map(str, args[:3]))} ... failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return str(proc.stdout)


def _lines(path: Path) -> list[str]:
    return [
        line.split("#", 1)[0].strip()
        for line in path.read_text().splitlines()
        if line.split("#", 1)[0].strip()
    ]


def version() -> str:
    text = (REPO / "pyproject.toml").read_text()
    match = re.search(r'^version = "([^"]+)"', text, re.MULTILINE)
    return match.group(1) if match else "0"


def source_date_epoch() -> int:
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env:
        return int(env)
    try:
        return int(_run(["git", "-C", str(REPO), "log", "-1", "--format=%ct"]).strip())
    except (ImageBuildError, ValueError, OSError):
        return BASE_EPOCH


def tools() -> Path:
    """mmdebstrap and umoci, unpacked privately from bookworm."""
    return fetch(SUITE, ["mmdebstrap", "umoci"]) / "usr" / "bin"


# ---------------------------------------------------------------------------- base layer
def base_key() -> str:
    data = json.dumps(
        {
            "suite": SUITE,
            "packages": _lines(PACKAGES),
            "excludes": DPKG_EXCLUDES,
            "epoch": BASE_EPOCH,
            "variant": "essential",
        },
        sort_keys=True,
    )
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def base_layer(refresh: bool = False) -> Path:
    """The cached base root filesystem tarball (built if missing or ``refresh``)."""
    out = cache_root() / "image" / f"base-{SUITE}-{base_key()}.tar"
    if out.exists() and not refresh:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    bin_dir = tools()
    tmp = out.with_name(out.stem + ".partial.tar")
    args = [
        str(bin_dir / "mmdebstrap"),
        "--variant=essential",
        "--format=tar",
        f"--include={','.join(_lines(PACKAGES))}",
        *(f"--dpkgopt=path-exclude={pattern}" for pattern in DPKG_EXCLUDES),
        '--customize-hook=rm -rf "$1"/var/cache/* "$1"/var/log/* "$1"/var/lib/apt/lists/*',
        SUITE,
        str(tmp),
        f"deb {debian_mirror()} {SUITE} main",
    ]
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(BASE_EPOCH)}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    _run(args, env=env, timeout=1200)
    tmp.rename(out)
    return out


# ---------------------------------------------------------------------------- app layer
def wheels(workdir: Path) -> list[Path]:
    """nrirp's wheel (built now) and the pinned dependency wheels (cached)."""
    pip = [sys.executable, "-m", "pip"]
    cache = cache_root() / "image" / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    pins = _lines(REQUIREMENTS)
    missing = [pin for pin in pins if not _cached_wheel(cache, pin)]
    if missing:
        _run(
            [*pip, "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(cache), *missing]
        )
    found = [_cached_wheel(cache, pin) for pin in pins]
    own = workdir / "wheel"
    _run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(own), str(REPO)],
        env={**os.environ, "SOURCE_DATE_EPOCH": str(source_date_epoch())},
    )
    return [*(w for w in found if w is not None), *sorted(own.glob("nrirp-*.whl"))]


def _cached_wheel(cache: Path, pin: str) -> Path | None:
    name, _, ver = pin.partition("==")
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for wheel in sorted(cache.glob("*.whl")):
        parts = wheel.name.split("-")
        if re.sub(r"[-_.]+", "_", parts[0]).lower() == stem and parts[1] == ver:
            return wheel
    return None


def app_tree(workdir: Path) -> Path:
    root = workdir / "app"
    site = root / SITE
    site.mkdir(parents=True)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--no-warn-script-location",
            "--target",
            str(site),
            *map(str, wheels(workdir)),
        ]
    )
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts name the build's Python
    for record in site.glob("*.dist-info/direct_url.json"):
        record.unlink()  # names the local wheel path
    for record in site.glob("*.dist-info/RECORD"):
        record.write_text(
            "".join(
                f"{line}\n"
                for line in record.read_text().splitlines()
                if "direct_url.json" not in line
            )
        )
    _run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            "-s",
            str(root),
            "-p",
            "/",
            str(site),
        ]
    )
    script = root / ENTRYPOINT
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        f"#!{PYTHON} -I\nimport sys\n\nfrom nrirp.app.cli import main\n\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return root


def deterministic_tar(root: Path, out: Path, epoch: int) -> None:
    """``root``'s tree as a tar: sorted, owned by root, every time ``epoch``."""

    def entries() -> Iterator[Path]:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            base = Path(dirpath)
            if base != root:
                yield base
            for name in sorted(filenames):
                yield base / name

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in entries():
            info = tar.gettarinfo(str(path), str(path.relative_to(root)))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = epoch
            info.pax_headers = {}
            if info.isdir():
                info.mode = 0o755
            elif info.isfile():
                info.mode = 0o755 if info.mode & 0o111 else 0o644
            if info.isfile():
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)


# ---------------------------------------------------------------------------- assembly
def assemble(base: Path, app: Path, tag: str, epoch: int, out: Path, workdir: Path) -> str:
    umoci = str(tools() / "umoci")
    layout = workdir / "oci"
    ref_tag = tag.rsplit(":", 1)[1] if ":" in tag.rsplit("/", 1)[-1] else "latest"
    image = f"{layout}:{ref_tag}"
    created = _iso(epoch)
    _run([umoci, "init", "--layout", str(layout)])
    _run([umoci, "new", "--image", image])
    _run([umoci, "raw", "add-layer", "--no-history", "--image", image, str(base)])
    _run([umoci, "raw", "add-layer", "--no-history", "--image", image, str(app)])
    _run(
        [
            umoci,
            "config",
            "--no-history",
            "--image",
            image,
            "--created",
            created,
            "--author",
            "nrirp",
            "--os",
            "linux",
            "--architecture",
            _architecture(),
            "--config.user",
            "0:0",
            "--config.entrypoint",
            f"/{ENTRYPOINT}",
            "--config.cmd",
            "--help",
            "--config.workingdir",
            "/",
            *(arg for env in ENV for arg in ("--config.env", env)),
            "--config.label",
            f"org.opencontainers.image.version={version()}",
            "--config.label",
            "org.opencontainers.image.title=nrirp",
        ]
    )
    _run([umoci, "gc", "--layout", str(layout)])
    index_path = layout / "index.json"
    index = json.loads(index_path.read_text())
    for manifest in index["manifests"]:
        manifest.setdefault("annotations", {})["io.containerd.image.name"] = tag
    index_path.write_text(json.dumps(index, sort_keys=True, separators=(",", ":")))
    deterministic_tar(layout, out, epoch)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    return digest


def _iso(epoch: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _architecture() -> str:
    machine = os.uname().machine
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def build(output: Path, tag: str | None = None, refresh_base: bool = False) -> str:
    """Build the image archive ``output``; returns its sha256."""
    tag = tag or f"localhost/nrirp:{version()}"
    epoch = source_date_epoch()
    base = base_layer(refresh_base)
    with tempfile.TemporaryDirectory(prefix="nrirp-image-") as tmp:
        workdir = Path(tmp)
        app_tar = workdir / "app.tar"
        deterministic_tar(app_tree(workdir), app_tar, epoch)
        output.parent.mkdir(parents=True, exist_ok=True)
        return assemble(base, app_tar, tag, epoch, output, workdir)


def source_key() -> str:
    """A digest of everything the image is built from: the sources, the project file, the
    package and wheel lists, this builder and the base layer's key."""
    digest = hashlib.sha256(base_key().encode())
    files = [REPO / "pyproject.toml", PACKAGES, REQUIREMENTS, Path(__file__).resolve()]
    files += sorted(
        p
        for p in (REPO / "src").rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and not p.name.endswith((".pyc", ".egg-info"))
        and ".egg-info" not in str(p)
    )
    for path in files:
        digest.update(str(path.relative_to(REPO) if path.is_relative_to(REPO) else path).encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def cached_image(tag: str | None = None) -> Path:
    """The image archive of the current sources under ``$NRIRP_CACHE/image/`` (built when the
    sources changed; older archives are removed): for the end-to-end tests."""
    directory = cache_root() / "image"
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"nrirp-{source_key()}.tar"
    if not out.exists():
        partial = out.with_name(out.stem + ".partial")
        build(partial, tag)
        for old in directory.glob("nrirp-*.tar"):
            old.unlink()
        partial.rename(out)
    return out


def lock() -> str:
    """``requirements.txt`` from the running environment: nrirp's runtime dependencies."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement

    seen: dict[str, str] = {}

    def walk(name: str) -> None:
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            return
        dist = metadata.distribution(name)
        seen[key] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                walk(req.name)

    walk("nrirp")
    head = [line for line in REQUIREMENTS.read_text().splitlines() if line.startswith("#")]
    pins = [f"{k}=={v}" for k, v in sorted(seen.items()) if k != "nrirp"]
    return "\n".join([*head, *pins]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.image.build", description=__doc__)
    parser.add_argument("--output", type=Path, default=REPO / "build" / "nrirp-image.tar")
    parser.add_argument("--tag", help="image name (default: localhost/nrirp:<version>)")
    parser.add_argument("--refresh-base", action="store_true", help="rebuild the Debian base")
    parser.add_argument("--lock", action="store_true", help="rewrite requirements.txt and exit")
    args = parser.parse_args(argv)
    if args.lock:
        REQUIREMENTS.write_text(lock())
        print(f"wrote {REQUIREMENTS}")
        return 0
    try:
        digest = build(args.output, args.tag, args.refresh_base)
    except ImageBuildError as exc:
        print(f"image build failed: {exc}", file=sys.stderr)
        return 1
    print(f"{args.output}: sha256 {digest} ({args.tag or f'localhost/nrirp:{version()}'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
