"""``nrirp status``: ask a running daemon what it decided.

Reads the daemon's status report from its socket ``<state-dir>/status.sock`` (0600: run it as
the daemon's user, e.g. ``kubectl exec``), or from ``http://ENDPOINT/status`` with ``--http``,
and prints the policy, the configuration's source and generation, the runtime connection and
readiness, the pools or balloons with their CPUs and memory nodes, and every container with
its CPUs, memory nodes and the reason of its last decision. ``--json`` prints the report as
the daemon sent it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from nrirp.app.commands.common.daemon_client import STATUS_SOCKET, fetch_http, fetch_socket
from nrirp.app.commands.common.parsing import add_command_parser

HELP = "show what a running daemon decided (its status socket or HTTP endpoint)"

EXIT_OK = 0
EXIT_UNREACHABLE = 1
EXIT_NOT_READY = 3
EXIT_CODES = {
    EXIT_OK: "the daemon answered and is ready",
    EXIT_UNREACHABLE: "no answer (no daemon, wrong --state-dir, no permission) or a bad answer",
    EXIT_NOT_READY: "the daemon answered but is not ready (see the runtime line)",
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = add_command_parser(subparsers, "status", HELP, "docs/deploy.md", EXIT_CODES)
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        default="/var/lib/nrirp",
        help="the daemon's state directory, holding status.sock (default: %(default)s)",
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="ask http://HOST:PORT/status (the daemon's instrumentation.httpEndpoint) instead",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--svg",
        metavar="FILE",
        help="also draw the machine with every container's CPUs and memory into FILE "
        "(docs/pictures.md)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        raw = fetch_http(args.http) if args.http else fetch_socket(args.state_dir)
        report = json.loads(raw)
        if not isinstance(report, dict):
            raise ValueError("the answer is not a JSON object")
    except (OSError, ValueError) as exc:
        where = f"http://{args.http}/status" if args.http else f"{args.state_dir}/{STATUS_SOCKET}"
        print(f"nrirp status: no answer from {where}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(report))
    if args.svg:
        try:
            _draw(report, args.svg)
        except (OSError, ValueError) as exc:
            print(f"nrirp status: no picture: {exc}", file=sys.stderr)
            return EXIT_UNREACHABLE
    return EXIT_OK if report.get("ready") else EXIT_NOT_READY


def _draw(report: dict[str, Any], path: str) -> None:
    """The report's placement (the daemon's machine, groups and containers) as SVG."""
    from nrirp.app.pictures import render_svg
    from nrirp.app.placement.document import placement_from_document

    if not report.get("placement"):
        raise ValueError("the daemon reported no placement (not started yet, or older)")
    config = report.get("config") or {}
    svg = render_svg(
        placement_from_document(report["placement"]),
        title=f"policy {report.get('policy', '?')} (nrirp status)",
        subtitle=f"config {config.get('source', '?')}, generation {config.get('generation', '?')}",
    )
    with open(path, "w", encoding="utf-8") as out:
        out.write(svg)


SHOWN_PROBLEMS = 5
"""The most problems of a reload the ``last reload:`` line lists (the rest are counted)."""


def _problems(reload: dict[str, Any]) -> str:
    """A reload's problems in one line: the first few (the first line of each), ``; ``
    between, then ``and N more``; a daemon that reports no ``problems``: its ``detail``."""
    problems = [str(p).splitlines()[0] for p in reload.get("problems") or [] if str(p)]
    if not problems:
        return str(reload.get("detail") or "")
    shown = problems[:SHOWN_PROBLEMS]
    if len(problems) > len(shown):
        shown.append(f"and {len(problems) - len(shown)} more")
    return "; ".join(shown)


def render(report: dict[str, Any]) -> str:
    """The report as text: a header, the resource groups, then one row per container."""
    config = report.get("config") or {}
    runtime = report.get("runtime") or {}
    lines = [
        f"policy:     {report.get('policy', '?')} (nrirp {report.get('version', '?')}, "
        f"plugin {report.get('plugin', '?')})",
        f"config:     {_source(config)}, generation {config.get('generation', '?')}",
    ]
    reload = config.get("last_reload")
    if reload:
        detail = _problems(reload)
        detail = f": {detail}" if detail else ""
        lines.append(f"last reload: {reload.get('result')} ({reload.get('trigger')}){detail}")
    if config.get("reloading"):
        lines.append(f"reloading:  {config['reloading'].get('trigger')}")
    if runtime.get("kind", "nri") == "nri":
        state = "connected" if runtime.get("connected") else "not connected"
        if runtime.get("connected"):
            state += ", synchronized" if runtime.get("synchronized") else ", not synchronized"
        lines.append(
            f"runtime:    {runtime.get('runtime') or '-'}: {state} "
            f"(connections {runtime.get('connections', 0)})"
        )
    else:  # the engine API (and NRI v0.1) instead of NRI
        served = "serving" if runtime.get("connected") else "not serving"
        lines.append(f"serving:    {runtime.get('runtime') or '-'}: {served}")
    ready = "yes" if report.get("ready") else "no"
    reasons = "; ".join(report.get("ready_reasons") or [])
    lines.append(f"ready:      {ready}" + (f" ({reasons})" if reasons else ""))
    groups = report.get("groups") or []
    kind = report.get("groups_kind") or ""
    if groups:
        lines.append("")
        lines.extend(_table(_group_rows(kind, groups)))
    containers = report.get("containers") or []
    lines.append("")
    if containers:
        rows = [["NAMESPACE", "POD", "CONTAINER", "STATE", "CPUS", "MEMS", "REASON"]]
        for ctr in containers:
            rows.append(
                [
                    ctr.get("namespace") or "-",
                    ctr.get("pod") or "-",
                    ctr.get("name") or ctr.get("id", "-"),
                    ctr.get("state") or "-",
                    ctr.get("cpus") or "-",
                    ctr.get("mems") or "-",
                    ctr.get("reason") or "-",
                ]
            )
        lines.extend(_table(rows))
    else:
        lines.append("no containers")
    return "\n".join(lines) + "\n"


def _source(config: dict[str, Any]) -> str:
    """Where the configuration came from, with a custom resource's own generation."""
    source = str(config.get("source", "?"))
    generation = config.get("source_generation")
    return source if generation is None else f"{source} (resource generation {generation})"


def _group_rows(kind: str, groups: list[dict[str, Any]]) -> list[list[str]]:
    if kind == "balloons":
        rows = [["BALLOON", "TYPE", "CPUS", "IDLE CPUS", "MEMS", "CONTAINERS"]]
        for g in groups:
            rows.append(
                [
                    g.get("name", ""),
                    g.get("type", ""),
                    g.get("cpus") or "-",
                    g.get("shared_idle_cpus") or "-",
                    g.get("mems") or "-",
                    str(len(g.get("containers") or [])),
                ]
            )
        return rows
    rows = [["POOL", "KIND", "CPUS", "SHARED", "RESERVED", "ISOLATED", "MEMS", "CONTAINERS"]]
    for g in groups:
        rows.append(
            [
                g.get("name", ""),
                g.get("kind", ""),
                g.get("cpus") or "-",
                g.get("shared") or "-",
                g.get("reserved") or "-",
                g.get("isolated") or "-",
                g.get("mems") or "-",
                str(len(g.get("containers") or [])),
            ]
        )
    return rows


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
