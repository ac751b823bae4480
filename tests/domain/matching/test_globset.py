"""Glob sets (issue 9 item 3): the answer of Go's ``filepath.Match`` over every pattern, at a
cost that depends on the value, not on how many patterns there are."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.matching import GlobSet, glob_match

_PATTERN = st.text(alphabet="ab-/*?[]^\\c", max_size=7)
_VALUE = st.text(alphabet="ab-/c[]*", max_size=7)


@settings(max_examples=600, deadline=None)
@given(patterns=st.lists(_PATTERN, max_size=6), values=st.lists(_VALUE, min_size=1, max_size=8))
def test_a_glob_set_answers_as_go_over_every_pattern(
    patterns: list[str], values: list[str]
) -> None:
    globs = GlobSet(patterns)
    for value in values:
        assert globs.match(value) is any(glob_match(p, value) for p in patterns), value


def test_names_prefixes_suffixes_and_the_rest() -> None:
    globs = GlobSet(["kube-system", "team-*", "*-infra", "[ab]?c", "mon\\*", "bad[", "x*y*z"])
    assert globs.match("kube-system") and globs.match("team-a") and globs.match("db-infra")
    assert globs.match("b1c") and globs.match("mon*") and globs.match("x1y2z")
    assert not globs.match("monx") and not globs.match("bad[") and not globs.match("team-a/b")
    assert not globs.match("kube-public") and not GlobSet([]).match("")
    assert GlobSet(["*"]).match("") and not GlobSet(["*"]).match("a/b")


def cost(globs: GlobSet, value: str) -> tuple[int, int]:
    """(groups tried, patterns in the groups that could be tried one by one)."""
    return globs.groups_tried(value), max(
        [len(g.patterns) for g in [*globs._prefixes.values(), *globs._suffixes.values()]] or [0]
    )


def test_the_cost_of_a_match_does_not_grow_with_the_list() -> None:
    def config(n: int) -> GlobSet:
        names = [f"ns-{i:06d}" for i in range(n)]
        teams = [f"team{i}-*" for i in range(n // 5)]
        suffixes = [f"*-site{i}" for i in range(n // 5)]
        return GlobSet([*names, *teams, *suffixes])

    small, large = config(10), config(50_000)
    for value in ("ns-000007", "team1-web", "db-site1", "nothing-here", "kube-system"):
        assert small.match(value) is large.match(value)
        assert cost(small, value) == cost(large, value)  # (lookups hit, 1 pattern per group)
    assert cost(large, "team1-web") == (1, 1)
    assert large.match("ns-049999") and large.match("team9999-x") and large.match("a-site9999")
