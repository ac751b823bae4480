"""The pytest plugin of the test kit (entry point ``pytest11``: loaded by every pytest run in
an environment where nrirp is installed).

Fixtures: ``nrirp_engine`` builds started :class:`~nrirp.testing.EngineHarness` es and closes
them after the test; ``nrirp_machine`` gives catalogue machines by name; ``nrirp_kit`` is the
:mod:`nrirp.testing` module (builders and assertions). The kit is imported only when a test
asks for one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from nrirp.domain.topology import Machine
    from nrirp.testing.engines import EngineHarness


@pytest.fixture
def nrirp_kit() -> ModuleType:
    """The :mod:`nrirp.testing` module: ``nrirp_kit.pod(...)``, ``nrirp_kit.assert_exclusive``."""
    import nrirp.testing

    return nrirp.testing


@pytest.fixture
def nrirp_machine() -> Callable[[str], Machine]:
    """``nrirp_machine("server-4s-144")``: a catalogue machine (built once per process)."""
    from nrirp.testing.machines import fake_machine

    return fake_machine


@pytest.fixture
def nrirp_engine() -> Iterator[Callable[..., EngineHarness]]:
    """``nrirp_engine("balloons", machine="box-16", config={...})``: a started
    :class:`~nrirp.testing.EngineHarness` (arguments of :meth:`EngineHarness.build`); every
    one built is closed after the test."""
    from nrirp.testing.engines import EngineHarness

    built: list[EngineHarness] = []

    def build(policy: Any, **options: Any) -> EngineHarness:
        harness = EngineHarness.build(policy, **options)
        built.append(harness)
        return harness

    yield build
    for harness in built:
        harness.close()
