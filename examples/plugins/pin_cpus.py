"""Example plugin: pin containers' cpusets from pod annotations; re-pin running ones on demand.

``python examples/plugins/pin_cpus.py --socket PATH [--control-file FILE] ...``

At creation (and for existing containers at synchronization) a container gets the CPUs named by
its pod's annotation ``cpus.pin-cpus.nrirp.io/container.<container name>``, or else
``cpus.pin-cpus.nrirp.io/pod``; memory nodes likewise from ``mems.pin-cpus.nrirp.io/...``.
Values use the Linux list syntax (``0-3,8``). An invalid value fails the container's creation
with a message naming the annotation.

Re-pinning running containers: on SIGUSR1 the plugin reads the JSON control file, an object
mapping a container (its id, ``namespace/pod/container``, or its name, which matches every
container of that name) to CPUs (``"2-3"``) or to ``{"cpus": "2-3", "mems": "0"}``, and sends the
updates with an unsolicited UpdateContainers. It logs ``re-pinned N container(s), M failed``.

Runs as an external or a pre-launched plugin, like ``logger.py`` (``docs/nri-plugins.md``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from nrirp.adapters.nri import api
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import Plugin, Stub
from nrirp.adapters.nri.stub.cli import base_parser, run, setup_logging
from nrirp.domain.cpuset import CPUSet, CPUSetError

log = logging.getLogger("nrirp.examples.pin_cpus")

CPUS_KEY = "cpus.pin-cpus.nrirp.io"
MEMS_KEY = "mems.pin-cpus.nrirp.io"


class PinError(ValueError):
    """An annotation or control file entry that cannot be applied."""


@attrs.frozen
class Pin:
    """CPUs and (optionally) memory nodes to pin to, in Linux list syntax."""

    cpus: str | None
    mems: str | None

    def adjustment(self) -> api_pb2.ContainerAdjustment:
        return api.container_adjustment(cpus=self.cpus, mems=self.mems)

    def update(self, container_id: str) -> api_pb2.ContainerUpdate:
        return api.container_update(container_id, cpus=self.cpus, mems=self.mems)


@attrs.frozen
class Known:
    """A container the plugin has seen, by the names the control file may use."""

    id: str
    name: str
    pod: str  # namespace/pod


def cpu_list(value: object, where: str) -> str:
    """Validate a Linux CPU/node list; return it normalised."""
    if not isinstance(value, str):
        raise PinError(f"{where}: expected a CPU list string, got {value!r}")
    try:
        parsed = CPUSet.parse(value)
    except CPUSetError as exc:
        raise PinError(f"{where}: invalid CPU list {value!r}: {exc}") from None
    if not parsed:
        raise PinError(f"{where}: empty CPU list {value!r}")
    return str(parsed)


def pin_from_annotations(pod: api_pb2.PodSandbox, container_name: str) -> Pin | None:
    """The pin the pod's annotations ask for this container, or None."""
    annotations = pod.annotations
    found: dict[str, str | None] = {}
    for kind, prefix in (("cpus", CPUS_KEY), ("mems", MEMS_KEY)):
        value = None
        for key in (f"{prefix}/container.{container_name}", f"{prefix}/pod"):
            if key in annotations:
                value = cpu_list(annotations[key], f"annotation {key}")
                break
        found[kind] = value
    if found["cpus"] is None and found["mems"] is None:
        return None
    return Pin(found["cpus"], found["mems"])


def pins_from_control(document: object) -> dict[str, Pin]:
    """Parse the control file's JSON document: ``{container: cpus | {cpus, mems}}``."""
    if not isinstance(document, dict):
        raise PinError(f"control file: expected a JSON object, got {type(document).__name__}")
    pins: dict[str, Pin] = {}
    for key, value in document.items():
        if isinstance(value, dict):
            unknown = set(value) - {"cpus", "mems"}
            if unknown:
                raise PinError(f"control file: {key}: unknown keys {sorted(unknown)}")
            cpus = value.get("cpus")
            mems = value.get("mems")
            pins[key] = Pin(
                None if cpus is None else cpu_list(cpus, f"control file: {key}.cpus"),
                None if mems is None else cpu_list(mems, f"control file: {key}.mems"),
            )
            if pins[key] == Pin(None, None):
                raise PinError(f"control file: {key}: neither cpus nor mems given")
        else:
            pins[key] = Pin(cpu_list(value, f"control file: {key}"), None)
    return pins


class CpuPinner(Plugin):
    """Pins at creation from annotations; re-pins running containers from a control file."""

    def __init__(self, control_file: Path | None = None) -> None:
        self.control_file = control_file
        self.stub: Stub | None = None
        self.known: dict[str, Known] = {}
        self._pods: dict[str, str] = {}  # sandbox id -> namespace/name

    def _remember(self, pod_key: str, container: api_pb2.Container) -> None:
        self.known[container.id] = Known(container.id, container.name, pod_key)

    async def synchronize(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> list[api_pb2.ContainerUpdate]:
        by_id = {pod.id: pod for pod in pods}
        updates = []
        for container in containers:
            pod = by_id.get(container.pod_sandbox_id, api_pb2.PodSandbox())
            self._remember(f"{pod.namespace}/{pod.name}", container)
            try:
                pin = pin_from_annotations(pod, container.name)
            except PinError as exc:
                log.warning("container %s: %s", container.id, exc)
                continue
            if pin is not None:
                update = pin.update(container.id)
                api.set_ignore_failure(update)
                updates.append(update)
        log.info("synchronized %d containers, pinning %d", len(containers), len(updates))
        return updates

    async def create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> api_pb2.ContainerAdjustment | None:
        self._remember(f"{pod.namespace}/{pod.name}", container)
        pin = pin_from_annotations(pod, container.name)  # PinError fails the creation
        if pin is None:
            return None
        log.info(
            "pinning %s/%s/%s to cpus=%s mems=%s",
            pod.namespace,
            pod.name,
            container.name,
            pin.cpus or "-",
            pin.mems or "-",
        )
        return pin.adjustment()

    async def remove_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self.known.pop(container.id, None)

    def resolve(self, key: str) -> list[str]:
        """Container ids a control file key names."""
        if key in self.known:
            return [key]
        if key.count("/") == 2:
            pod_key, _, name = key.rpartition("/")
            return [k.id for k in self.known.values() if k.pod == pod_key and k.name == name]
        return [k.id for k in self.known.values() if k.name == key]

    async def apply_control_file(self) -> list[api_pb2.ContainerUpdate]:
        """Read the control file and re-pin the containers it names; returns failed updates."""
        if self.control_file is None or self.stub is None:
            raise PinError("no control file configured (--control-file)")
        try:
            document = json.loads(self.control_file.read_text())
        except (OSError, ValueError) as exc:
            raise PinError(f"control file {self.control_file}: {exc}") from None
        updates: list[api_pb2.ContainerUpdate] = []
        for key, pin in pins_from_control(document).items():
            ids = self.resolve(key)
            if not ids:
                log.warning("control file: no known container matches %r", key)
            updates.extend(pin.update(container_id) for container_id in ids)
        failed = await self.stub.update_containers(updates) if updates else []
        log.info("re-pinned %d container(s), %d failed", len(updates) - len(failed), len(failed))
        for update in failed:
            log.warning("update of container %s failed", update.container_id)
        return failed

    async def _apply_logged(self) -> None:
        try:
            await self.apply_control_file()
        except Exception as exc:
            log.error("re-pinning failed: %s", exc)

    def install_signal(self, loop: asyncio.AbstractEventLoop) -> None:
        """Re-pin from the control file on SIGUSR1."""
        tasks: set[asyncio.Task[None]] = set()

        def on_signal() -> None:
            task = loop.create_task(self._apply_logged())
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        loop.add_signal_handler(signal.SIGUSR1, on_signal)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    parser = base_parser("NRI plugin that pins containers' cpusets from pod annotations.")
    parser.add_argument(
        "--control-file",
        type=Path,
        help="JSON file {container: cpus | {cpus, mems}} applied to running containers on SIGUSR1",
    )
    args = parser.parse_args(argv)
    setup_logging(args.log_file, args.log_level)
    plugin = CpuPinner(args.control_file)

    def make_stub() -> Stub:
        stub = Stub(
            plugin,
            name=args.name,
            index=args.index,
            socket_path=args.socket,
            reconnect=not args.no_reconnect,
            default_name="pin-cpus",
            default_index="40",
        )
        plugin.stub = stub
        plugin.install_signal(asyncio.get_running_loop())
        return stub

    return run(make_stub)


if __name__ == "__main__":
    sys.exit(main())
