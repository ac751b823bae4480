"""Do metrics and the status endpoint cost CreateContainer anything? The topology-aware daemon
under gomockrt with and without them, interleaved.

``nrimockrt`` (``tools/gomockrt``) drives ``--pods`` live pods of mixed QoS against the daemon
(``nrirp run --policy topology-aware`` on a fake machine's sysfs tree, as
``bench/gomockrt_topology_aware.py`` runs it) in two variants, alternated ``--rounds`` times:

- ``off``: the Helm chart's default configuration (``reservedResources: {cpu: 750m}``), no
  HTTP endpoint;
- ``on``: the same plus ``instrumentation: {httpEndpoint: 127.0.0.1:PORT, prometheusExport:
  true}``, and a scraper thread that GETs ``/metrics`` and ``/status`` every
  ``--scrape-interval`` seconds (default 0.2 s: 75-150 times Prometheus' usual rate; on a
  quiet machine a run lasts about 2 s, so 1 s scraped at most once or not at all) for the
  whole run.

    .venv/bin/python bench/gomockrt_metrics.py                  # 5 rounds each, 200 pods
    .venv/bin/python bench/gomockrt_metrics.py --rounds 7 --scrape-interval 0.1

Prints CreateContainer p50/p99 per round and their medians per variant, the on/off ratio and
how many scrapes answered.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gomockrt_topology_aware import CONFIG, build, daemon_command, event, nrimockrt_run

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.fakehw.discovery import scratch_dir


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Scraper(threading.Thread):
    """GETs /metrics and /status every ``interval`` seconds until stopped."""

    def __init__(self, port: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.port, self.interval = port, interval
        self.stopped = threading.Event()
        self.ok = 0
        self.failed = 0

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            for path in ("/metrics", "/status"):
                try:
                    url = f"http://127.0.0.1:{self.port}{path}"
                    with urllib.request.urlopen(url, timeout=5) as answer:
                        answer.read()
                    self.ok += 1
                except OSError:
                    self.failed += 1  # before the daemon serves, after it stopped


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machine", default="server-112-pmem", help="catalogue machine")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--sync", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--scrape-interval", type=float, default=0.2)
    args = parser.parse_args()

    bindir = build() / "bin"
    workdir = Path(tempfile.mkdtemp(prefix="gomockrt-metrics-"))
    tree = Path(tempfile.mkdtemp(prefix="gomockrt-metrics-sysfs-", dir=scratch_dir())) / "sys"
    spec = load_machine(args.machine)
    write_sysfs(resolve(spec, f"machine {spec.name}"), tree)
    cgroups = workdir / "no-cgroups"
    cgroups.mkdir()
    results: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    scrapes = [0, 0]
    for number in range(args.rounds):
        for variant in ("off", "on"):
            label = f"{variant}{number}"
            port = free_port()
            config = workdir / f"{label}.yaml"
            text = CONFIG
            if variant == "on":
                text += (
                    f"instrumentation:\n  httpEndpoint: 127.0.0.1:{port}\n"
                    "  prometheusExport: true\n"
                )
            config.write_text(text)
            command = daemon_command(
                "topology-aware",
                tree,
                config,
                workdir / f"state-{label}",
                cgroups,
                workdir / f"nrirp-{label}.log",
            )
            scraper = Scraper(port, args.scrape_interval) if variant == "on" else None
            if scraper is not None:
                scraper.start()
            try:
                run, _ = nrimockrt_run(bindir / "nrimockrt", workdir, label, command, [], args)
            finally:
                if scraper is not None:
                    scraper.stopped.set()
                    scraper.join()
                    scrapes[0] += scraper.ok
                    scrapes[1] += scraper.failed
            p50 = event(run, "CreateContainer", "p50_us")
            p99 = event(run, "CreateContainer", "p99_us")
            results[variant].append((p50, p99))
            print(f"round {number + 1} {variant:>3}: CreateContainer p50 {p50:8.1f} us, "
                  f"p99 {p99:8.1f} us", file=sys.stderr)  # fmt: skip
    print(
        f"\n{args.machine}: {args.pods} live pods (-qos mix), sync {args.sync}, {args.rounds} "
        f"interleaved rounds; scrapes of /metrics and /status every {args.scrape_interval} s "
        f"(answered {scrapes[0]}, not answered {scrapes[1]} while the daemon was not up)"
    )
    print(f"{'variant':<10}{'p50 med':>10}{'p99 med':>10}  p50 per round")
    medians = {}
    for variant, rows in results.items():
        p50 = statistics.median(r[0] for r in rows)
        p99 = statistics.median(r[1] for r in rows)
        medians[variant] = p50
        per_round = " ".join(f"{r[0]:.0f}" for r in rows)
        print(f"{variant:<10}{p50:>10.1f}{p99:>10.1f}  {per_round}")
    print(f"on/off p50 ratio: {medians['on'] / medians['off']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
