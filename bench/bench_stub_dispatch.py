"""What the plugin stub adds to parsing on the per-event hot path, in process.

Times ``CreateContainerRequest.FromString`` alone against the stub's whole CreateContainer
handler (parse, handler scope, a plugin method returning no adjustment, reply encoding) on a
request shaped like containerd's (labels, annotations, env, cgroups path), with no transport.

    .venv/bin/python bench/bench_stub_dispatch.py [--calls 200000]

Prints the request size and the best of five runs per call, in microseconds.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable, Coroutine
from typing import Any, cast

from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub.dispatch import Dispatcher
from nrirp.adapters.nri.transport import CallContext


def request() -> bytes:
    pod = api_pb2.PodSandbox(id="p" * 64, name="web-0", namespace="shop", uid="u" * 36)
    for i in range(6):
        pod.labels[f"label-{i}"] = "v" * 12
        pod.annotations[f"annotation-{i}"] = "v" * 20
    ctr = api_pb2.Container(id="c" * 64, pod_sandbox_id="p" * 64, name="app")
    ctr.linux.resources.cpu.shares.value = 512
    ctr.linux.cgroups_path = f"/kubepods/burstable/pod{'u' * 36}/{'c' * 64}"
    ctr.env.extend(f"VAR{i}=value{i}" for i in range(5))
    return api_pb2.CreateContainerRequest(pod=pod, container=ctr).SerializeToString()


class NoAdjustment:
    async def create_container(self, pod: api_pb2.PodSandbox, ctr: api_pb2.Container) -> None:
        return None


async def configure(_request: api_pb2.ConfigureRequest) -> EventMask:
    return EventMask.CREATE_CONTAINER


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    calls: int = parser.parse_args().calls
    payload = request()
    serve = Dispatcher({"create_container": NoAdjustment().create_container}, configure).methods()[
        "CreateContainer"
    ]
    context = CallContext("nri.pkg.api.v1alpha1.Plugin", "CreateContainer", 1, None, ())

    def dispatch() -> None:
        step = cast(Coroutine[Any, Any, bytes], serve(payload, context))
        try:
            step.send(None)  # the handler never suspends: one step runs it to the end
        except StopIteration:
            return
        raise AssertionError("the handler suspended")

    def best(stmt: Callable[[], object]) -> float:
        return min(timeit.repeat(stmt, number=calls, repeat=5)) / calls * 1e6

    parse = best(lambda: api_pb2.CreateContainerRequest.FromString(payload))
    whole = best(dispatch)
    print(f"CreateContainerRequest: {len(payload)} bytes")
    print(f"parse only      {parse:6.2f} us")
    print(f"stub dispatch   {whole:6.2f} us  (adds {whole - parse:.2f} us)")


if __name__ == "__main__":
    main()
