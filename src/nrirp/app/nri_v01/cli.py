"""``nrirp-nri-v01 invoke``: the NRI v0.1 exec plugin's entry point.

The runtime (containerd 1.5/1.6) runs it for every container task it creates or deletes, with
the request as JSON on stdin, and reads one result from stdout. This client parses and checks
the request, then forwards it to the daemon (``nrirp run --nri-v01``) over the engine API's
socket with a hand-written gRPC call, and prints the daemon's answer. When no daemon listens,
it decides itself from the persisted state (``standalone``; ``conf.mode`` chooses). Whatever
happens, stdout gets one JSON result (an error result for bad input) and a traceback, if any,
goes to stderr (the runtime's log): exit 0 on success, 1 on error.

Start-up matters (the runtime waits for it on every container start): this module imports
only the standard library and light modules; nothing of the engine, YAML or protobuf.
"""

from __future__ import annotations

import os
import sys

from nrirp.adapters.engine_api import h2call, protowire
from nrirp.adapters.nri_v01.conf import PluginConf, parse_conf
from nrirp.adapters.nri_v01.protocol import (
    MAX_REQUEST_BYTES,
    VERSION,
    Request,
    RequestError,
    Result,
    error_result,
    parse_request,
)

INVOKE_PATH = "/nrirp.engine.v1.NriV01/Invoke"
DEFAULT_TYPE = "nrirp"


def reply_result(plugin: str, version: str, reply: bytes, engine: str) -> Result:
    """The result of the daemon's ``NriV01Reply`` (error = field 1, metadata = field 2)."""
    result = Result(plugin=plugin, version=version)
    for number, value in protowire.fields(reply):
        if not isinstance(value, bytes):
            continue
        if number == 1:
            result.error = value.decode("utf-8", "replace")
        elif number == 2:
            key, item = protowire.string_map_entry(value)
            result.metadata[key] = item
    result.metadata["engine"] = engine
    return result


def forward(request_json: bytes, conf: PluginConf) -> bytes:
    """The daemon's serialized reply to the request (raises ``h2call.CallError``)."""
    message = protowire.length_delimited(1, request_json)
    return h2call.unary_call(conf.socket, INVOKE_PATH, message, conf.timeout)


def decide(plugin: str, data: bytes) -> Result:
    """The result for the request in ``data``."""
    try:
        request = parse_request(data)
        conf = parse_conf(request.conf)
    except RequestError as exc:
        return error_result(plugin, f"bad request: {exc}")
    if conf.mode != "standalone":
        try:
            reply = forward(data, conf)
            return reply_result(plugin, request.version, reply, f"daemon {conf.socket}")
        except h2call.Unreachable as exc:
            if conf.mode == "daemon":
                return error_result(plugin, f"{exc} (conf.mode is daemon)", request.version)
        except h2call.CallError as exc:
            return error_result(plugin, f"engine API {conf.socket}: {exc}", request.version)
        except protowire.WireError as exc:
            return error_result(plugin, f"engine API {conf.socket}: bad reply: {exc}")
    return _standalone(plugin, request, conf)


def _standalone(plugin: str, request: Request, conf: PluginConf) -> Result:
    from nrirp.app.nri_v01.standalone import decide_standalone

    outcome = decide_standalone(request, conf)
    result = request.new_result(plugin)
    result.error = outcome.error
    result.metadata.update(outcome.metadata)
    result.metadata["engine"] = "standalone"
    return result


def main(argv: list[str] | None = None) -> int:
    """Run one invocation; returns the exit code (0: success, 1: error result)."""
    argv = sys.argv if argv is None else argv
    plugin = os.path.basename(argv[0]) if argv and argv[0] else DEFAULT_TYPE
    if len(argv) < 2 or argv[1] != "invoke":
        given = argv[1] if len(argv) > 1 else "nothing"
        result = error_result(plugin, f"invalid arg {given}: usage: {plugin} invoke < request")
    else:
        try:
            data = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
            result = decide(plugin, data)
        except Exception as exc:  # a bug: the traceback for the log, a result for the runtime
            import traceback

            traceback.print_exc(file=sys.stderr)
            result = error_result(plugin, f"internal error: {type(exc).__name__}: {exc}", VERSION)
    try:
        sys.stdout.write(result.to_json() + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return 1 if result.error else 0


if __name__ == "__main__":
    raise SystemExit(main())
