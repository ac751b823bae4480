#!/usr/bin/env python3
"""Regenerate the protobuf Python modules and type stubs of every proto set (``PROTO_SETS``):
NRI's (``src/nrirp/adapters/nri/proto``) and our engine API's
(``src/nrirp/adapters/engine_api/proto``).

Run after editing a .proto file: ``.venv/bin/python tools/gen_proto.py``. The generated files are
committed so that an installed nrirp never needs protoc; ``--check`` fails if they are stale.
Only messages are generated (``*_pb2.py`` + ``.pyi``): the engine API's gRPC service is
registered by hand (``adapters/engine_api/service.py``), so no untyped ``*_pb2_grpc.py``.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_SETS = (
    (ROOT / "src/nrirp/adapters/nri/proto", ROOT / "src/nrirp/adapters/nri/gen"),
    (ROOT / "src/nrirp/adapters/engine_api/proto", ROOT / "src/nrirp/adapters/engine_api/gen"),
    (ROOT / "src/nrirp/adapters/podresources/proto", ROOT / "src/nrirp/adapters/podresources/gen"),
)


def generate(proto_dir: Path, out: Path) -> None:
    import grpc_tools
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    plugin = shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit("protoc-gen-mypy not found next to this Python; pip install mypy-protobuf")
    protos = sorted(str(p.name) for p in proto_dir.glob("*.proto"))
    args = [
        "protoc",
        f"-I{proto_dir}",
        f"-I{include}",
        f"--plugin=protoc-gen-mypy={plugin}",
        f"--python_out={out}",
        f"--mypy_out={out}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


def _same(a: Path, b: Path) -> bool:
    return b.exists() and filecmp.cmp(a, b, shallow=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if generated files are stale")
    opts = parser.parse_args()
    stale: list[str] = []
    for proto_dir, gen_dir in PROTO_SETS:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            generate(proto_dir, out)
            produced = sorted(p.name for p in out.iterdir() if p.is_file())
            if opts.check:
                stale += [str(gen_dir / n) for n in produced if not _same(out / n, gen_dir / n)]
                continue
            gen_dir.mkdir(parents=True, exist_ok=True)
            for n in produced:
                shutil.copyfile(out / n, gen_dir / n)
            print("generated:", ", ".join(str(gen_dir / n) for n in produced))
    if stale:
        print("stale generated files:", ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
