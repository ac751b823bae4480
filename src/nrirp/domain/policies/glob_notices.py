"""Warnings about namespace globs a configuration lists that can match nothing.

A malformed glob (``[abc``) is accepted, as the reference's ``filepath.Match`` accepts it, and
matches no namespace; the policies say so once per configuration instead of leaving the
operator to find out why a namespace is not where it was meant to be."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from nrirp.domain.matching import glob_problem


def malformed_globs(where: str, patterns: Iterable[str]) -> Iterator[str]:
    """One warning per malformed pattern of ``where`` (e.g. ``reservedPoolNamespaces``)."""
    for index, pattern in enumerate(patterns):
        problem = glob_problem(pattern)
        if problem is not None:
            yield (
                f"{where}[{index}]: {pattern!r} is a malformed glob ({problem}): it matches nothing"
            )
