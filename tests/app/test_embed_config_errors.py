"""``Engine.build`` and ``Engine.reconfigure`` with configs that fail to load: the one error
class, the old config kept (issue 9 item 8: a non-scalar key used to escape as TypeError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import RecordingRuntimeUpdates
from nrirp.adapters.system import ConfigFileError
from nrirp.app.embed import Engine
from nrirp.domain.config import ConfigError

BOX16 = expected_machine(load_machine("box-16"))
BAD = {
    "non-scalar key": ("? [1, 2]: x\n", "a mapping key must be a scalar"),
    "list key": ("? [1, 2]\n: x\n", "a mapping key must be a scalar, not a list"),
    "bad bytes": (b"availableResources: \xff\n", "not UTF-8 text"),
    "billion laughs": (
        "".join(
            f"{n}: &{n} [{','.join([f'*{p}' if p else 'lol'] * 10)}]\n"
            for p, n in zip(["", *"bcdefg"], "bcdefgh", strict=True)
        ),
        "more than 1000000 values once aliases are expanded",
    ),
    "unknown field": ({"nope": 1}, "nope: unknown field"),
}


def engine() -> Engine:
    built = Engine.build(
        "template",
        runtime_updates=RecordingRuntimeUpdates(),
        machine=BOX16,
        config="availableResources: {cpu: 'cpuset:0-7'}\n",
    )
    built.start()
    return built


@pytest.mark.parametrize("case", list(BAD))
def test_reconfigure_refuses_and_keeps_the_old_config(case: str) -> None:
    source, reason = BAD[case]
    agent = engine()
    outcome = agent.reconfigure(source)
    assert not outcome.applied and reason in outcome.reason and "\n" not in outcome.reason
    assert agent.config is not None
    assert str(agent.config.spec.available_resources.cpu) == "cpuset:0-7"
    assert agent.reconfigure("{}").applied  # and it still takes a good one


@pytest.mark.parametrize("case", list(BAD))
def test_build_refuses_with_a_config_error(case: str) -> None:
    source, reason = BAD[case]
    with pytest.raises(ConfigError, match="template policy configuration") as caught:
        Engine.build(
            "template",
            runtime_updates=RecordingRuntimeUpdates(),
            machine=BOX16,
            config=source,
        )
    assert reason in str(caught.value)


def test_build_reads_the_config_file_at_once(tmp_path: Path) -> None:
    """docs/embedding.md: ``build`` fails for a bad configuration; a file is no exception
    (it used to be read only by ``start()``)."""

    def build(**config: str) -> Engine:
        return Engine.build(
            "template", runtime_updates=RecordingRuntimeUpdates(), machine=BOX16, **config
        )

    with pytest.raises(ConfigFileError, match="does not exist"):
        build(config_file=str(tmp_path / "missing.yaml"))
    typo = tmp_path / "typo.yaml"
    typo.write_text("availableResources: {cpus: 'cpuset:0-7'}\n")
    with pytest.raises(ConfigError, match=r"availableResources\.cpus: unknown field"):
        build(config_file=str(typo))
    good = tmp_path / "good.yaml"
    good.write_text("availableResources: {cpu: 'cpuset:0-7'}\n")
    engine = build(config_file=str(good))
    assert engine.config is None  # not in force before start
    engine.start()
    assert engine.config is not None
    assert str(engine.config.spec.available_resources.cpu) == "cpuset:0-7"
    with pytest.raises(TypeError, match="not both"):
        build(config="{}", config_file=str(good))
