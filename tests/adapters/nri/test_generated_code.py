"""The committed protobuf modules match their .proto sources and load without protoc."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GEN_TOOL = Path("tools/gen_proto.py")
PROTO_DIR = Path("src/nrirp/adapters/nri/proto")
GEN_DIR = Path("src/nrirp/adapters/nri/gen")
# the tool regenerates every proto set (tools/gen_proto.py PROTO_SETS): copy them all
OTHER_SETS = tuple(
    p.relative_to(ROOT)
    for p in sorted((ROOT / "src/nrirp/adapters").glob("*/proto"))
    + sorted((ROOT / "src/nrirp/adapters").glob("*/gen"))
    if p.parent.name != "nri"
)


def run_check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / GEN_TOOL), "--check"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_committed_generated_code_is_up_to_date() -> None:
    result = run_check(ROOT)
    assert result.returncode == 0, result.stderr


def test_every_proto_has_committed_module_and_stub() -> None:
    protos = sorted(p.stem for p in (ROOT / PROTO_DIR).glob("*.proto"))
    assert "api" in protos
    for stem in protos:
        assert (ROOT / GEN_DIR / f"{stem}_pb2.py").is_file(), stem
        assert (ROOT / GEN_DIR / f"{stem}_pb2.pyi").is_file(), stem


def test_check_detects_a_stale_file(tmp_path: Path) -> None:
    # A private copy of the tool and its inputs, so the real tree is never touched.
    for rel in (GEN_TOOL, PROTO_DIR, GEN_DIR, *OTHER_SETS):
        src, dst = ROOT / rel, tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(src, dst)
    assert run_check(tmp_path).returncode == 0

    stub = tmp_path / GEN_DIR / "api_pb2.pyi"
    stub.write_text(stub.read_text() + "\n# hand edit\n")
    result = run_check(tmp_path)
    assert result.returncode == 1
    assert "api_pb2.pyi" in result.stderr

    stub.unlink()
    result = run_check(tmp_path)
    assert result.returncode == 1
    assert "api_pb2.pyi" in result.stderr


BLOCK_PROTOC = """
import importlib.abc, sys

class NoProtoc(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("grpc_tools", "mypy_protobuf"):
            raise ImportError(f"{name} must not be needed at run time")
        return None

sys.meta_path.insert(0, NoProtoc())
from nrirp.adapters.nri.gen import api_pb2, ttrpc_pb2

request = api_pb2.ConfigureRequest(runtime_name="containerd", request_timeout=2000)
print(api_pb2.DESCRIPTOR.services_by_name["Plugin"].full_name)
print(api_pb2.ConfigureRequest.FromString(request.SerializeToString()).request_timeout)
print(ttrpc_pb2.Request(service="x").service)
"""


def test_generated_modules_load_without_protoc() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_PROTOC],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["nri.pkg.api.v1alpha1.Plugin", "2000", "x"]
