"""The CRI v1 API (runtime.v1) compiled from Debian's api.proto at test time.

The proto imports gogoproto only for Go code generation options; those lines are stripped so that
``grpc_tools.protoc`` can compile it without gogo. Output is cached per (proto text, grpcio-tools
version) under ``$NRIRP_CACHE/cri-proto``.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import importlib.util
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import attrs

from tests.support.debian import cache_root

from .packages import HarnessSetupError

PACKAGE = "nrirp_cri"  # a package name of our own, so the generated modules cannot clash

_GOGO_IMPORT = re.compile(r'^\s*import\s+"github\.com/gogo/protobuf/gogoproto/gogo\.proto"\s*;\s*$')
_GOGO_FILE_OPTION = re.compile(r"^\s*option\s+\(gogoproto\.[A-Za-z0-9_]+\)\s*=\s*[^;]*;\s*$")
_GOGO_FIELD_OPTIONS = re.compile(r"\s*\[\s*\(gogoproto\.[^\]]*\]")


def strip_gogoproto(proto_text: str) -> str:
    """Drop the gogoproto import and every gogoproto option, keeping line numbers."""
    lines = []
    for line in proto_text.splitlines():
        if _GOGO_IMPORT.match(line) or _GOGO_FILE_OPTION.match(line):
            lines.append("")
        else:
            lines.append(_GOGO_FIELD_OPTIONS.sub("", line))
    stripped = "\n".join(lines) + "\n"
    if "gogoproto" in stripped:
        leftover = next(line for line in stripped.splitlines() if "gogoproto" in line)
        raise HarnessSetupError(f"unhandled gogoproto use in the CRI proto: {leftover.strip()!r}")
    return stripped


@attrs.frozen
class CriApi:
    """The generated CRI modules: ``pb`` holds messages/enums, ``grpc`` the service stubs."""

    pb: ModuleType
    grpc: ModuleType
    directory: Path


def _grpc_tools_version() -> str:
    from importlib.metadata import version

    return version("grpcio-tools")


def _protoc(proto_dir: Path, proto_file: Path, out_dir: Path) -> None:
    from grpc_tools import protoc

    include = Path(importlib.util.find_spec("grpc_tools").origin or "").parent / "_proto"  # type: ignore[union-attr]
    args = [
        "grpc_tools.protoc",
        f"-I{proto_dir}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        str(proto_file),
    ]
    if protoc.main(args) != 0:
        raise HarnessSetupError(f"grpc_tools.protoc failed on {proto_file} (args: {args})")


def compile_cri_api(api_proto: Path, cache: Path | None = None) -> Path:
    """Compile ``api_proto`` into a cached directory; returns the directory to put on sys.path."""
    text = strip_gogoproto(api_proto.read_text())
    key = hashlib.sha256((text + _grpc_tools_version()).encode()).hexdigest()[:16]
    base = (cache or cache_root()) / "cri-proto"
    base.mkdir(parents=True, exist_ok=True)
    target = base / key
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / PACKAGE / "api_pb2_grpc.py").exists():
            return target
        work = Path(tempfile.mkdtemp(prefix="build-", dir=base))
        try:
            (work / PACKAGE).mkdir()
            (work / PACKAGE / "__init__.py").write_text('"""Generated CRI v1 API."""\n')
            (work / PACKAGE / "api.proto").write_text(text)
            _protoc(work, work / PACKAGE / "api.proto", work)
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        finally:
            if work.exists():
                shutil.rmtree(work)
    return target


def load_cri_api(directory: Path) -> CriApi:
    """Import the generated modules from a directory made by :func:`compile_cri_api`."""
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    pb = importlib.import_module(f"{PACKAGE}.api_pb2")
    stubs = importlib.import_module(f"{PACKAGE}.api_pb2_grpc")
    loaded_from = Path(pb.__file__ or "").parent.parent
    if loaded_from != directory:
        raise HarnessSetupError(f"{PACKAGE} already imported from {loaded_from}, not {directory}")
    return CriApi(pb=pb, grpc=stubs, directory=directory)
