"""The daemon's endpoints: ``/metrics``, ``/healthz``, ``/readyz``, ``/status`` and
``/explain?container=...`` on ``instrumentation.httpEndpoint``, and the status socket
``<state-dir>/status.sock`` (0600), which answers one request line (``/status``, the default
for a client that sends none, or ``/explain?container=...``) with JSON.

Threads: the pipeline runs on the event loop; the HTTP server answers on threads of its own.
What an answer needs from the pipeline (the policy's samples, the containers, the status
report) is taken on the event loop, between two NRI requests, through :class:`LoopCall`: the
HTTP thread never takes the pipeline's lock, and the pipeline never waits for a scrape. The
policy's samples are taken again only when an operation ran since the last time (or every
``reportPeriod`` when the ``policy`` group is ``polled``); everything else is read from the
:class:`~nrirp.adapters.metrics.MetricsRecorder`, which the pipeline writes without a lock.
``prometheus_client`` is imported only when metrics are exported.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fnmatch
import json
import logging
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from nrirp import __version__
from nrirp.adapters.memory import LastDecisions
from nrirp.app.daemon.health import Health, ServingState, Verdict
from nrirp.app.daemon.status import ConfigState, status_report
from nrirp.domain.config import InstrumentationConfig, MetricsExporter, PolicyConfig
from nrirp.domain.model import Container
from nrirp.domain.pipeline import ResourceManager, UnknownContainerError
from nrirp.domain.policy import MetricSample

if TYPE_CHECKING:  # the HTTP parts, the metrics' export and explanations load when used
    from nrirp.adapters.http import Response
    from nrirp.adapters.http.server import HttpServer
    from nrirp.adapters.metrics import MetricsRecorder
    from nrirp.adapters.metrics.prometheus import PolicyView, PrometheusExporter

log = logging.getLogger("nrirp.daemon")

T = TypeVar("T")

STATUS_SOCKET = "status.sock"
LOOP_TIMEOUT = 2.0
"""Seconds an HTTP answer waits for the event loop before it uses what it has."""
MAX_SAMPLE_AGE = 60.0
"""Seconds after which the policy's samples are taken again even if nothing ran."""
REQUEST_WAIT = 0.2
"""Seconds the status socket waits for a request line before it answers with the status
(a client that sends none, such as ``socat``, gets the status report)."""
_MAX_UNIX_PATH = 107


class LoopCall:
    """Runs a function on the event loop from another thread and waits (bounded) for it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def __call__(self, fn: Callable[[], T], timeout: float = LOOP_TIMEOUT) -> T:
        """``fn()``'s result; raises ``TimeoutError`` if the loop does not run it in time
        (it may still run later) and whatever ``fn`` raised."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the event loop did not answer within {timeout} s") from None


class Observability:
    """Metrics export, health, status: started on the event loop with :meth:`start`,
    (re)configured from the configuration in force with :meth:`apply`, stopped with
    :meth:`close`."""

    def __init__(
        self,
        *,
        manager: ResourceManager,
        recorder: MetricsRecorder,
        serving: ServingState,
        decisions: LastDecisions | None,
        config_state: ConfigState,
        plugin_name: str,
        state_dir: str,
    ) -> None:
        self.manager = manager
        self.recorder = recorder
        self.serving = serving
        self.decisions = decisions
        self.config_state = config_state
        self.plugin_name = plugin_name
        self.state_dir = state_dir
        self.health = Health(
            serving,
            started=lambda: manager.started,
            config_valid=lambda: manager.started and config_state.generation > 0,
        )
        self.server: HttpServer | None = None
        self.exporter: PrometheusExporter | None = None
        self.status_socket: str | None = None
        self._instrumentation: InstrumentationConfig | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._call: LoopCall | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._unix_server: asyncio.AbstractServer | None = None
        self._containers: list[Container] = []
        self._view_generation = -1
        self._policy_polled = False
        self._report_period = 30.0
        self.default_endpoint = ""
        """Served when the configuration sets no ``httpEndpoint`` (``nrirp run
        --http-endpoint``): health probes then work whatever the configuration says."""

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """On the event loop: the heartbeat and the status socket (the HTTP server follows
        the configuration: :meth:`apply`)."""
        self._loop = asyncio.get_running_loop()
        self._call = LoopCall(self._loop)
        self._tasks.append(asyncio.create_task(self._heartbeat(), name="nrirp-heartbeat"))
        self._tasks.append(asyncio.create_task(self._poll_samples(), name="nrirp-sample-poll"))
        await self._open_status_socket()

    def apply(self, config: PolicyConfig | None) -> None:
        """Serve what ``config``'s ``instrumentation`` block asks for: the HTTP server on
        ``httpEndpoint`` (moved when it changes, stopped when it empties), ``/metrics`` when
        ``prometheusExport`` (or ``metricsExporter: prometheus``) is set, the metric groups
        and the polling period. Without ``httpEndpoint``, :attr:`default_endpoint` is served.
        An endpoint that cannot be served (a port in use, a bad address) is logged and the
        server stays where it was, else goes to :attr:`default_endpoint`: the health probes
        keep an answer; the daemon goes on."""
        inst = config.instrumentation if config is not None else InstrumentationConfig()
        previous, self._instrumentation = self._instrumentation, inst
        self._apply_metrics(inst)
        endpoint = inst.http_endpoint or self.default_endpoint
        if previous is not None and self.server is not None and self.server.endpoint == endpoint:
            return
        before = self.server.endpoint if self.server is not None else ""
        self._stop_server()
        if not endpoint:
            return
        for candidate in dict.fromkeys([endpoint, before, self.default_endpoint]):
            if candidate and self._serve(candidate, wanted=endpoint):
                return

    def _serve(self, endpoint: str, *, wanted: str) -> bool:
        """Start the HTTP server on ``endpoint`` (in place of ``wanted`` when they differ)."""
        from nrirp.adapters.http.server import HttpServer

        server = HttpServer(
            endpoint,
            {
                "/healthz": self._healthz,
                "/readyz": self._readyz,
                "/metrics": self._metrics,
                "/status": self._status,
            },
            {"/explain": self._explain},
        )
        try:
            server.start()
        except (OSError, ValueError) as exc:
            log.error("HTTP endpoint %s not served: %s", endpoint, exc)
            return False
        self.server = server
        log.info(
            "serving /healthz, /readyz, /status, /explain%s on %s (port %d)%s",
            ", /metrics" if self.exporter is not None else "",
            endpoint,
            server.port,
            "" if endpoint == wanted else f" instead of {wanted}",
            extra={"fields": {"endpoint": endpoint, "port": server.port}},
        )
        return True

    async def close(self) -> None:
        self._stop_server()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._unix_server is not None:
            self._unix_server.close()
            await self._unix_server.wait_closed()
            self._unix_server = None
        if self.status_socket is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.status_socket)
            self.status_socket = None

    def _stop_server(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.stop()

    # ------------------------------------------------------------------ metrics
    def _apply_metrics(self, inst: InstrumentationConfig) -> None:
        exports = inst.prometheus_export or inst.metrics_exporter is MetricsExporter.PROMETHEUS
        self._policy_polled = any(fnmatch.fnmatchcase("policy", p) for p in inst.metrics.polled)
        self._report_period = inst.report_period.nanoseconds / 1e9
        if not exports:
            self.exporter = None
            return
        from nrirp.adapters.metrics.prometheus import ExportSettings, PrometheusExporter

        settings = ExportSettings(
            enabled=inst.metrics.enabled,
            policy=self.manager.policy.name,
            version=__version__,
        )
        if self.exporter is None:
            self.exporter = PrometheusExporter(
                self.recorder, self._policy_view, lambda: self.health.readiness().ok, settings
            )
        else:
            self.exporter.settings = settings

    def _policy_view(self) -> PolicyView:
        """On the HTTP thread: the policy's samples and the system gauges, taken from the
        pipeline again if an operation ran since (unless the group is polled)."""
        from nrirp.adapters.metrics.prometheus import PolicyView

        recorder = self.recorder
        stale = time.monotonic() - recorder.samples_at > (
            self._report_period if self._policy_polled else MAX_SAMPLE_AGE
        )
        changed = recorder.generation != self._view_generation and not self._policy_polled
        if (changed or stale or not recorder.samples_at) and self._call is not None:
            with contextlib.suppress(TimeoutError):
                self._call(self._take_samples)
        samples: list[MetricSample] = list(recorder.snapshot().samples)
        from nrirp.adapters.metrics import system_samples

        samples.extend(system_samples(self.manager.machine, self._containers))
        return PolicyView(samples, recorder.samples_at)

    def _take_samples(self) -> None:
        """On the event loop: the policy's samples (published to the recorder) and the
        containers (for the system gauges, computed on the HTTP thread)."""
        manager = self.manager
        if not manager.started:
            return
        self._view_generation = self.recorder.generation
        self.recorder.publish(manager.policy_metrics())
        self._containers = manager.containers()

    async def _poll_samples(self) -> None:
        while True:
            await asyncio.sleep(self._report_period)
            if self._policy_polled:
                self._take_samples()

    # ------------------------------------------------------------------ routes
    def _healthz(self) -> Response:
        return _verdict(self.health.liveness(), 500)

    def _readyz(self) -> Response:
        return _verdict(self.health.readiness(), 503)

    def _metrics(self) -> Response:
        exporter = self.exporter
        if exporter is None:
            return _response(404, b"metrics are not exported (instrumentation.prometheusExport)\n")
        body, content_type = exporter.render()
        return _response(200, body, content_type)

    def _status(self) -> Response:
        if self._call is None:
            return _response(503, b"not started\n")
        try:
            report = self._call(self.report)
        except TimeoutError as exc:
            return _response(503, f"{exc}\n".encode())
        return _response(200, _json(report), "application/json")

    def _explain(self, params: Mapping[str, str]) -> Response:
        container = params.get("container", "")
        if not container:
            return _answer(400, error_document("give the container: /explain?container=ID"))
        if self._call is None:
            return _answer(503, error_document("not started"))
        try:
            status, document = self._call(lambda: self.explain(container))
        except TimeoutError as exc:
            return _answer(503, error_document(str(exc)))
        return _answer(status, document)

    def explain(self, container: str) -> tuple[int, dict[str, Any]]:
        """The policy's explanation of ``container`` (id, ``namespace/pod/name`` ...) as an
        HTTP status and a document (on the event loop: the policy works it out from its
        state between two requests)."""
        if not self.manager.started:
            return 503, error_document("the policy has not started")
        try:
            explanation = self.manager.explain(container)
        except UnknownContainerError as exc:
            return 404, error_document(str(exc))
        except Exception as exc:  # a bug in a policy's explain: say so, serve on
            log.exception("explaining %s failed", container)
            return 500, error_document(f"internal error: {type(exc).__name__}: {exc}")
        from nrirp.app.explain import explanation_document

        return 200, explanation_document(explanation)

    def report(self) -> dict[str, Any]:
        """The status report (on the event loop)."""
        return status_report(
            manager=self.manager,
            health=self.health,
            config=self.config_state,
            decisions=self.decisions,
            plugin_name=self.plugin_name,
        )

    # ------------------------------------------------------------------ loop side
    async def _heartbeat(self) -> None:
        while True:
            self.health.beat()
            await asyncio.sleep(1.0)

    async def _open_status_socket(self) -> None:
        path = os.path.join(self.state_dir, STATUS_SOCKET)
        if len(os.fsencode(path)) > _MAX_UNIX_PATH:
            log.warning("no status socket: the path %s is too long for a unix socket", path)
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # ours: the state directory is locked by this daemon
        try:
            self._unix_server = await asyncio.start_unix_server(self._serve_status, path)
            os.chmod(path, 0o600)  # inside the 0700 state directory from the start
        except OSError as exc:
            log.warning("no status socket %s: %s", path, exc)
            return
        self.status_socket = path

    async def _serve_status(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            try:
                line = await asyncio.wait_for(reader.readline(), REQUEST_WAIT)
            except TimeoutError:
                line = b""
            writer.write(_json(self._socket_answer(line.decode("utf-8", "replace").strip())))
            await writer.drain()
        except Exception:
            log.exception("status socket: answer failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _socket_answer(self, request: str) -> Any:
        """The answer to one request line on the status socket."""
        path, _, query = request.partition("?")
        if path in ("", "/status", "status"):
            return self.report()
        if path in ("/explain", "explain"):
            params = urllib.parse.parse_qs(query, keep_blank_values=True)
            container = params.get("container", [""])[0]
            if not container:
                return error_document("give the container: /explain?container=ID")
            return self.explain(container)[1]
        return error_document(f"unknown request {request[:100]!r}: /status or /explain?...")


def _answer(status: int, document: Any) -> Response:
    return _response(status, _json(document), "application/json")


def _verdict(verdict: Verdict, failure: int) -> Response:
    return _response(200 if verdict.ok else failure, verdict.text().encode())


def _json(report: Any) -> bytes:
    return (json.dumps(report, indent=None, sort_keys=False, default=str) + "\n").encode()


def _response(status: int, body: bytes, content_type: str | None = None) -> Response:
    from nrirp.adapters.http import Response

    if content_type is None:
        return Response(status, body)
    return Response(status, body, content_type)


def error_document(message: str) -> dict[str, Any]:
    from nrirp.app.explain import error_document as document

    return document(message)
