"""``nrirp run`` as a process against untrusted input (issue 9 items 1 and 8): configs that
fail to load at reload keep the old config and the file watcher alive, and a billion-laughs
affinity annotation is refused in one line while the container is created."""

from __future__ import annotations

import itertools
import re
import signal
from pathlib import Path

from tests.adapters.nri.stub.runtime_peer import RuntimeServer
from tests.app.test_run import Daemon, create, ctr, pod, sysfs, with_runtime

__all__ = ["sysfs"]  # the module-scoped fixture, shared with test_run

BAD_CONFIGS: list[tuple[str | bytes, str]] = [
    ("? [1, 2]: x\n", "a mapping key must be a scalar"),
    ("pinCPU: true\npinCPU: true\n", "found duplicate key 'pinCPU'"),
    (b"availableResources: \xff\n", "invalid start byte"),  # by the reader or the loader
    (
        "".join(
            f"{n}: &{n} [{','.join([f'*{p}' if p else 'lol'] * 10)}]\n"
            for p, n in zip(["", *"bcdefg"], "bcdefgh", strict=True)
        ),
        "more than 1000000 values once aliases are expanded",
    ),
    ("# " + "x" * (1 << 20) + "\n", "policy configuration too large"),
]


def billion_laughs(container: str) -> str:
    names = [*"abcdefghi", container]
    lines = [f"a: &a [{','.join(['lol'] * 9)}]"]
    for before, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [{','.join([f'*{before}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_reload_refuses_every_bad_config_and_keeps_watching(tmp_path: Path, sysfs: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("{}\n")

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, "--config-file", str(config), policy="template")
        try:
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            for count, (text, reason) in enumerate(BAD_CONFIGS, start=1):
                if isinstance(text, bytes):
                    config.write_bytes(text)
                else:
                    config.write_text(text)
                daemon.proc.send_signal(signal.SIGHUP)
                pattern = r"reload \(SIGHUP\): new configuration .* not applied"
                while len(refused := [r for r in daemon.records() if _matches(r, pattern)]) < count:
                    await daemon.wait_for(pattern)
                assert reason in refused[-1]["msg"] and len(refused[-1]["msg"]) < 600
            # the watcher is alive: a good config written later is picked up and applied
            config.write_text("availableResources:\n  cpu: cpuset:0-7\n")
            await daemon.wait_for(r"reload \(file change\): configuration .* applied")
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
            await daemon.wait_for("state saved to")
        finally:
            daemon.kill()
        assert "Traceback" not in daemon.text()

    with_runtime(tmp_path, body)


def _matches(record: dict[str, object], pattern: str) -> bool:
    return re.search(pattern, str(record["msg"])) is not None


def test_a_billion_laughs_affinity_is_refused_in_one_line(tmp_path: Path, sysfs: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("reservedResources: {cpu: 750m}\n")
    laughs = billion_laughs("app")
    assert len(laughs) < 400
    p = pod(**{"resource-policy.nri.io/affinity": laughs})

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, "--config-file", str(config), policy="topology-aware")
        try:
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            reply = await create(peer, p, ctr("app"))
            assert reply.adjust.linux.resources.cpu.cpus  # placed all the same
            notice = await daemon.wait_for("affinity ignored")
            assert "anchors, aliases and tags are not allowed" in notice["msg"]
            assert "\n" not in notice["msg"] and len(notice["msg"]) < 400
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()

    with_runtime(tmp_path, body)
