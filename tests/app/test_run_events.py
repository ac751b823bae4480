"""``nrirp run`` subscribes to the NRI events its policy and controllers need (issue 14): the
requests always, PostStartContainer only when settings wait for a container's process; the
mask is logged at debug level; a reload that changes what is needed registers again."""

from __future__ import annotations

import signal
from pathlib import Path

from nrirp.adapters.nri.api import EventMask
from tests.adapters.nri.stub.runtime_peer import RuntimeServer
from tests.app.test_run import Daemon, sysfs, with_runtime

__all__ = ["sysfs"]  # the module-scoped fixture, shared with test_run

REQUESTS = (
    "RunPodSandbox,StopPodSandbox,RemovePodSandbox,CreateContainer,StartContainer,"
    "UpdateContainer,StopContainer,RemoveContainer"
)
PLAIN = "reservedResources: {cpu: 750m}\n"
SCHEDULING = PLAIN + "schedulingClasses: [{name: batch, policy: batch}]\n"


def test_events_follow_the_configuration_and_a_reload_subscribes_anew(
    tmp_path: Path, sysfs: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(PLAIN)

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(
            tmp_path, sysfs, "--config-file", str(config), "--log-level", "debug",
            policy="topology-aware",
        )  # fmt: skip
        try:
            peer = await server.next_peer(timeout=20)
            response = await peer.handshake(runtime_version="v1.7.24", nri_version="")
            assert EventMask(response.events).pretty() == REQUESTS
            line = await daemon.wait_for("subscribing to")
            assert line["msg"].startswith(f"policy topology-aware: subscribing to {REQUESTS};")
            assert line["events"] == REQUESTS
            # scheduling classes containerd 1.7 cannot carry: they wait for PostStartContainer
            config.write_text(SCHEDULING)
            daemon.proc.send_signal(signal.SIGHUP)
            again = await server.next_peer(timeout=20)  # registers again at once
            response = await again.handshake(runtime_version="v1.7.24", nri_version="")
            events = EventMask(response.events)
            assert events & EventMask.POST_START_CONTAINER
            assert not events & (EventMask.POST_CREATE_CONTAINER | EventMask.POST_UPDATE_CONTAINER)
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()
        assert "Traceback" not in daemon.text()

    with_runtime(tmp_path, body)
