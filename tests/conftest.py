"""Every test starts with the ``nrirp`` loggers as the test run set them up: a test that runs
the CLI in process (which sends them to stderr and stops their propagation) must not take
the records away from a later test's ``caplog``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _nrirp_logging_restored() -> Iterator[None]:
    logger = logging.getLogger("nrirp")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    for handler in list(logger.handlers):
        if handler not in saved[0]:
            logger.removeHandler(handler)
    for handler in saved[0]:
        if handler not in logger.handlers:
            logger.addHandler(handler)
    logger.setLevel(saved[1])
    logger.propagate = saved[2]
