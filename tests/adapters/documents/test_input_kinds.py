"""Bad YAML of every shape gives the one error class, with the same reason, from configs,
machine specs and workloads (issue 10 item 7)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nrirp.adapters.documents import (
    CONFIG,
    MACHINE_SPEC,
    WORKLOAD,
    Budget,
    DocumentError,
    UnreadableDocument,
    load_document,
    load_policy_config,
)
from nrirp.adapters.fakehw import MachineSpecError, spec_from_yaml
from nrirp.app.simulator import WorkloadError, parse_workload
from nrirp.domain.config import ConfigError

SHAPES: dict[str, str | bytes] = {
    "duplicate key": "a: 1\na: 2\n",
    "duplicate key after a merge": "b: &b {x: 1}\nc:\n  <<: *b\n  x: 2\n  x: 3\n",
    "list as a key": "? [1, 2]\n: x\n",
    "mapping as a key": "{? {a: 1} : x}\n",
    "value that cannot be built": "a: 2024-13-45\n",
    "unknown tag": "a: !!python/object:os.system {}\n",
    "syntax error": "a: [1, 2\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "undefined alias": "a: *nowhere\n",
    "alias cycle": "a: &a [*a]\n",
    "too many values once expanded": "".join(
        f"{n}: &{n} [{','.join([f'*{p}' if p else 'x'] * 10)}]\n"
        for p, n in zip(["", *"bcdefg"], "bcdefgh", strict=True)
    ),
    "nested too deeply": "a: " + "[" * 40 + "]" * 40 + "\n",
    "control character": "a: \x07\n",
    "not UTF-8": b"a: \xc3\x28\n",
    "too large": b"# " + b"x" * (5 << 20) + b"\n",
}

Loader = Callable[[str | bytes], object]
KINDS: dict[str, tuple[Loader, type[DocumentError], Budget]] = {
    "config": (lambda s: load_policy_config("template", s), ConfigError, CONFIG),
    "machine spec": (lambda s: spec_from_yaml(s, "test.yaml"), MachineSpecError, MACHINE_SPEC),
    "workload": (lambda s: parse_workload(s, name="w.yaml"), WorkloadError, WORKLOAD),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_bad_yaml_of_each_shape_gives_the_one_error_class(shape: str, kind: str) -> None:
    load, error_class, budget = KINDS[kind]
    source = SHAPES[shape]
    with pytest.raises(UnreadableDocument) as reason:
        load_document(source, budget)
    with pytest.raises(DocumentError) as caught:
        load(source)
    error = caught.value
    assert type(error) is error_class
    message = str(error)
    assert reason.value.problem in message  # the same reason whichever kind is read
    assert len(message) < 500 and message.count("\n") <= 1
    if isinstance(error, ConfigError):
        assert [p.path for p in error.problems] == ["<document>"]
    elif isinstance(error, MachineSpecError):
        assert message.startswith("test.yaml: ")
    else:
        assert isinstance(error, WorkloadError) and error.problems[0][0] == "<document>"


def test_the_kinds_keep_their_own_words_for_syntax() -> None:
    with pytest.raises(ConfigError, match="invalid YAML at line 2, column 1: found duplicate"):
        load_policy_config("template", "a: 1\na: 2\n")
    with pytest.raises(MachineSpecError, match=r"test\.yaml: not valid YAML at line 2, column 1"):
        spec_from_yaml("a: 1\na: 2\n", "test.yaml")
    with pytest.raises(WorkloadError, match="<document>: invalid YAML at line 2, column 1"):
        parse_workload("a: 1\na: 2\n", name="w.yaml")
