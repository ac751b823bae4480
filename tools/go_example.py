#!/usr/bin/env python3
"""The engine API's Go client example (``examples/engine_api/go``): its stubs and its binary.

The Go toolchain, grpc-go and protobuf-go come from Debian's packages, the ones the Go NRI
tools are built from (``tests/support/gomockrt.py``, cached under ``$NRIRP_CACHE/gomockrt``):
no Go module proxy is needed. ``protoc-gen-go`` and ``protoc-gen-go-grpc`` are built from
those sources and run by grpcio-tools' protoc on ``engine.proto``; the generated files are
committed (``enginev1/``) so that the example builds with ``go build`` alone.

    .venv/bin/python tools/go_example.py            # regenerate enginev1/
    .venv/bin/python tools/go_example.py --check    # fail if enginev1/ is stale
    .venv/bin/python tools/go_example.py --build /tmp/engineclient
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples/engine_api/go"
PROTO = ROOT / "src/nrirp/adapters/engine_api/proto/engine.proto"
MODULE = "nrirp.example/engineclient"
"""The example's module path (``go.mod``); its stubs are ``MODULE/enginev1``."""
STUBS = ("engine.pb.go", "engine_grpc.pb.go")


def go_env(toolchain: Path, gopath: Path) -> dict[str, str]:
    """The environment of a GOPATH build with Debian's Go and Go sources under ``toolchain``
    (the gomockrt build directory), ``gopath`` first on GOPATH, nothing fetched."""
    return {
        **os.environ,
        "GOROOT": str(toolchain / "x/usr/lib/go-1.24"),
        "GOPATH": f"{gopath}:{toolchain / 'x/usr/share/gocode'}",
        "GO111MODULE": "off",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
        "GOCACHE": str(toolchain / "gocache"),
        "GOFLAGS": "",
    }


def _go(toolchain: Path, gopath: Path, *args: str) -> None:
    go = toolchain / "x/usr/lib/go-1.24/bin/go"
    done = subprocess.run(
        [str(go), *args], env=go_env(toolchain, gopath), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"go {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


def generate(toolchain: Path, out: Path) -> None:
    """Write the Go stubs of ``engine.proto`` (package ``enginev1``) into ``out``."""
    from grpc_tools import protoc

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="go-plugins-") as scratch:
        bin_dir = Path(scratch)
        _go(toolchain, bin_dir, "build", "-o", str(bin_dir / "protoc-gen-go"),
            "google.golang.org/protobuf/cmd/protoc-gen-go")  # fmt: skip
        _go(toolchain, bin_dir, "build", "-o", str(bin_dir / "protoc-gen-go-grpc"),
            "google.golang.org/grpc/cmd/protoc-gen-go-grpc")  # fmt: skip
        package = f"M{PROTO.name}={MODULE}/enginev1;enginev1"
        args = [
            "protoc",
            f"-I{PROTO.parent}",
            f"--plugin=protoc-gen-go={bin_dir / 'protoc-gen-go'}",
            f"--plugin=protoc-gen-go-grpc={bin_dir / 'protoc-gen-go-grpc'}",
            f"--go_out={out}",
            "--go_opt=paths=source_relative",
            f"--go_opt={package}",
            f"--go-grpc_out={out}",
            "--go-grpc_opt=paths=source_relative",
            f"--go-grpc_opt={package}",
            PROTO.name,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")


def stale(toolchain: Path) -> list[str]:
    """The committed stubs that differ from freshly generated ones."""
    with tempfile.TemporaryDirectory(prefix="go-stubs-") as scratch:
        fresh = Path(scratch)
        generate(toolchain, fresh)
        committed = EXAMPLE / "enginev1"
        return [
            name
            for name in STUBS
            if not (committed / name).exists()
            or not filecmp.cmp(fresh / name, committed / name, shallow=False)
        ]


def build(toolchain: Path, binary: Path) -> None:
    """Build the example (as committed) into ``binary``, after checking it is formatted as
    gofmt formats it and ``go vet`` finds nothing."""
    gofmt = toolchain / "x/usr/lib/go-1.24/bin/gofmt"
    unformatted = subprocess.run(
        [str(gofmt), "-l", str(EXAMPLE)], capture_output=True, text=True, check=True
    ).stdout.split()
    if unformatted:
        raise SystemExit(f"not formatted by gofmt: {', '.join(unformatted)}")
    with tempfile.TemporaryDirectory(prefix="go-example-") as scratch:
        gopath = Path(scratch)
        shutil.copytree(EXAMPLE, gopath / "src" / MODULE)
        _go(toolchain, gopath, "vet", MODULE)
        _go(toolchain, gopath, "build", "-o", str(binary), MODULE)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if enginev1/ is stale")
    parser.add_argument("--build", type=Path, metavar="BINARY", help="build the example")
    opts = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.support.gomockrt import build_gomockrt

    toolchain = build_gomockrt()
    if opts.check:
        differ = stale(toolchain)
        if differ:
            print(f"stale in {EXAMPLE / 'enginev1'}: {', '.join(differ)}", file=sys.stderr)
            return 1
    elif opts.build is None:
        generate(toolchain, EXAMPLE / "enginev1")
    if opts.build is not None:
        build(toolchain, opts.build.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
