"""A raw NRI plugin on the transport alone, driven by the Go runtime harness in test_go_interop.

It registers (the request padded with an unknown protobuf field of ``--register-pad`` bytes),
answers every Plugin method with an empty reply except CreateContainer, whose reply carries an
unknown field of the next size from ``--reply-pads`` (Go ignores unknown fields, so only the
framing matters), and writes what it saw to ``--out`` as JSON when the runtime hangs up or
terminates it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
from collections import Counter

from nrirp.adapters.nri.api import PLUGIN_SERVICE, RUNTIME_SERVICE
from nrirp.adapters.nri.transport import (
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    CallContext,
    Session,
)
from nrirp.adapters.nri.transport.envelope import _varint

METHODS = (
    "Configure",
    "Synchronize",
    "Shutdown",
    "CreateContainer",
    "UpdateContainer",
    "StopContainer",
    "StateChange",
)
UNKNOWN_FIELD_TAG = _varint((1000 << 3) | 2)


def unknown_field(size: int) -> bytes:
    return UNKNOWN_FIELD_TAG + _varint(size) + b"u" * size if size else b""


def string_field(number: int, text: str) -> bytes:
    raw = text.encode()
    return bytes(((number << 3) | 2,)) + _varint(len(raw)) + raw


async def main(args: argparse.Namespace) -> None:
    calls: Counter[str] = Counter()
    largest: Counter[str] = Counter()
    pads = itertools.cycle(int(p) for p in args.reply_pads.split(","))
    done = asyncio.Event()
    session = Session(on_close=lambda _reason: done.set())
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)

    def handler(method: str):  # type: ignore[no-untyped-def]
        async def handle(payload: bytes, _ctx: CallContext) -> bytes:
            calls[method] += 1
            largest[method] = max(largest[method], len(payload))
            return unknown_field(next(pads)) if method == "CreateContainer" else b""

        return handle

    session.open(PLUGIN_SERVICE_CONN).serve(PLUGIN_SERVICE, {m: handler(m) for m in METHODS})
    runtime = session.open(RUNTIME_SERVICE_CONN)
    await session.connect(args.socket)
    register = (
        string_field(1, "pyinterop") + string_field(2, "42") + unknown_field(args.register_pad)
    )
    await runtime.call(RUNTIME_SERVICE, "RegisterPlugin", register, timeout=5.0)
    await done.wait()
    session.close()
    await session.wait_closed()
    with open(args.out, "w") as out:
        json.dump({"calls": calls, "largest_request": largest, "registered": True}, out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--register-pad", type=int, default=0)
    parser.add_argument("--reply-pads", default="0")
    asyncio.run(main(parser.parse_args()))
