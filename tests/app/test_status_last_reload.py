"""``nrirp status``'s ``last reload:`` line names every problem of a configuration that was not
applied (the first few and how many more), not only the first one."""

from __future__ import annotations

from typing import Any

from nrirp.app.commands.status import SHOWN_PROBLEMS, render
from nrirp.app.composition.reloads import ReloadOutcome, ReloadRequest
from nrirp.app.daemon.config_events import ConfigEvents
from nrirp.app.daemon.status import ConfigState


class Recorder:
    def config_reloaded(self, result: str, generation: int) -> None:
        pass


def last_reload_after(problems: tuple[str, ...]) -> str:
    """The status line after an invalid reload with ``problems``, through the listener the
    daemon uses and the status command's rendering."""
    state = ConfigState()
    events = ConfigEvents(
        state=state,
        recorder=Recorder(),  # type: ignore[arg-type]
        observability=None,  # type: ignore[arg-type]
        log_settings=None,  # type: ignore[arg-type]
    )
    source = "file /etc/nrirp/config.yaml"
    request = ReloadRequest(trigger="SIGHUP", source=source, load=lambda: None)  # type: ignore
    events.reload_ended(request, ReloadOutcome(result="invalid", problems=problems))
    report: dict[str, Any] = {"config": state.report(), "runtime": {"kind": "engine-api"}}
    [line] = [x for x in render(report).splitlines() if x.startswith("last reload:")]
    return line


def test_every_problem_of_an_invalid_reload_is_shown() -> None:
    line = last_reload_after(
        ("reservedResources.cpu: not a CPU amount: 'zero'", "nope: unknown field")
    )
    assert line == (
        "last reload: invalid (SIGHUP): reservedResources.cpu: not a CPU amount: 'zero'; "
        "nope: unknown field"
    )


def test_many_problems_are_the_first_few_and_how_many_more() -> None:
    problems = tuple(f"field{i}: unknown field\n  (details)" for i in range(SHOWN_PROBLEMS + 3))
    line = last_reload_after(problems)
    shown = "; ".join(f"field{i}: unknown field" for i in range(SHOWN_PROBLEMS))
    assert line == f"last reload: invalid (SIGHUP): {shown}; and 3 more"


def test_a_report_without_problems_shows_its_detail() -> None:
    """A daemon that reports only ``detail`` (older) or a reload without problems."""
    reload = {"result": "refused", "trigger": "SIGHUP", "detail": "no CPUs for that"}
    report: dict[str, Any] = {"config": {"last_reload": reload}, "runtime": {"kind": "x"}}
    assert "last reload: refused (SIGHUP): no CPUs for that" in render(report).splitlines()
    applied = {"result": "applied", "trigger": "SIGHUP", "detail": "", "problems": []}
    report["config"]["last_reload"] = applied
    assert "last reload: applied (SIGHUP)" in render(report).splitlines()
