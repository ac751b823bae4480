"""Glob patterns match as Go's path/filepath.Match does (the reference's Matches* operators).

Every expected answer in CASES was checked against Go 1.24's filepath.Match; so were 500,000
random pattern/value pairs while writing the matcher (see docs/affinity.md).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.matching import glob_match, glob_problem

CASES = [
    # pattern, value, match
    ("abc", "abc", True),
    ("abc", "abcd", False),
    ("", "", True),
    ("", "a", False),
    ("*", "", True),
    ("*", "anything-at.all", True),
    ("*", "a/b", False),  # '*' never crosses '/'
    ("a*", "a/b", False),
    ("*/*", "ns/ctr", True),
    ("kube-*", "kube-system", True),
    ("kube-*", "kube", False),
    ("*-system", "kube-system", True),
    ("a*b*c", "axxbyyc", True),
    ("a*b*c", "axxbyy", False),
    ("?", "x", True),
    ("?", "", False),
    ("?", "/", False),  # '?' never matches '/'
    ("??", "x", False),
    ("[abc]", "b", True),
    ("[abc]", "d", False),
    ("[a-c]x", "bx", True),
    ("[^a-c]x", "dx", True),
    ("[^a-c]x", "bx", False),
    ("[/]", "/", True),  # a class may match '/'
    ("[^a]", "/", True),
    ("[z-a]", "q", False),  # an inverted range matches nothing
    ("[^z-a]", "q", True),
    ("[!a]", "!", True),  # '!' does not negate (Go's negation is '^')
    ("[!a]", "b", False),
    ("\\*", "*", True),
    ("\\*", "x", False),
    ("\\[a]", "[a]", True),
    ("[\\]]", "]", True),
    ("[\\-]", "-", True),
    ("a\\?", "a?", True),
    ("é*", "été", True),
    ("[é-ü]", "ö", True),
    # Go does not backtrack into an earlier star: these are False in the reference although
    # the equivalent regular expression would match them
    ("*[^a]*[/]", "bb]/b*/", False),
    ("[^a]*[^a]*", "*]/", False),
    ("*[ab]*[^a]*/", "ab/b/", False),
]


@pytest.mark.parametrize(("pattern", "value", "expected"), CASES)
def test_matches_as_go_filepath_match(pattern: str, value: str, expected: bool) -> None:
    assert glob_problem(pattern) is None
    assert glob_match(pattern, value) is expected


BAD = [
    ("[", "unclosed character class"),
    ("[a", "unclosed character class"),
    ("[a-", "unclosed character class"),
    ("[]", "unexpected ']'"),
    ("[]a]", "unexpected ']'"),
    ("[-a]", "unexpected '-'"),
    ("[a-]", "unexpected ']'"),
    ("[^]", "unexpected ']'"),
    ("a\\", "lone '\\'"),
    ("*[", "unclosed character class"),
    ("[\\", "unclosed character class"),
]


@pytest.mark.parametrize(("pattern", "problem"), BAD)
def test_malformed_patterns_match_nothing_and_say_why(pattern: str, problem: str) -> None:
    found = glob_problem(pattern)
    assert found is not None
    assert problem in found
    for value in ("", "a", "[", "-", "]", pattern):
        assert glob_match(pattern, value) is False


_PLAIN = st.text(alphabet="ab/.-_xyz", max_size=8)


@settings(max_examples=300, deadline=None)
@given(value=_PLAIN)
def test_a_pattern_without_wildcards_matches_only_itself(value: str) -> None:
    assert glob_match(value, value)
    assert not glob_match(value, value + "x")
    assert not glob_match(value + "x", value)


@settings(max_examples=300, deadline=None)
@given(value=st.text(alphabet="ab*?[]^-\\/!", max_size=8))
def test_escaping_every_character_matches_it_literally(value: str) -> None:
    pattern = "".join("\\" + char for char in value)
    assert glob_match(pattern, value)


def _as_regex(pattern: str) -> str:
    return "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in pattern)


@settings(max_examples=500, deadline=None)
@given(
    pattern=st.text(alphabet="ab/*?", max_size=7),
    value=st.text(alphabet="ab/", max_size=7),
)
def test_stars_and_question_marks_agree_with_a_regular_expression(pattern: str, value: str) -> None:
    # without classes (which may match '/') Go's greedy chunk matching loses nothing
    assert glob_match(pattern, value) is (re.fullmatch(_as_regex(pattern), value) is not None)
