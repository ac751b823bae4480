"""Plugin identity resolution: arguments, environment, argv[0], defaults, validation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri.stub import IdentityError, PluginIdentity, resolve_identity
from nrirp.adapters.nri.stub.identity import parse_program_name

ENV = {"NRI_PLUGIN_NAME": "envname", "NRI_PLUGIN_IDX": "07"}


def test_arguments_win_over_environment_and_argv0() -> None:
    got = resolve_identity("arg", "12", environ=ENV, argv0="/opt/nri/plugins/99-prog")
    assert got == PluginIdentity("arg", "12") and got.full_name == "12-arg"


def test_environment_wins_over_argv0_and_each_part_resolves_on_its_own() -> None:
    assert resolve_identity(environ=ENV, argv0="/x/99-prog") == PluginIdentity("envname", "07")
    assert resolve_identity(environ={"NRI_PLUGIN_IDX": "03"}, argv0="/x/99-prog") == PluginIdentity(
        "prog", "03"
    )
    assert resolve_identity("mine", environ={}, argv0="/x/44-prog") == PluginIdentity("mine", "44")


def test_argv0_then_defaults() -> None:
    assert resolve_identity(environ={}, argv0="/opt/nri/plugins/10-logger") == PluginIdentity(
        "logger", "10"
    )
    assert resolve_identity(
        environ={}, argv0="/usr/bin/python3", default_name="logger", default_index="50"
    ) == PluginIdentity("logger", "50")


def test_empty_environment_values_are_ignored() -> None:
    env = {"NRI_PLUGIN_NAME": "", "NRI_PLUGIN_IDX": ""}
    assert resolve_identity(environ=env, argv0="/x/01-a") == PluginIdentity("a", "01")


@pytest.mark.parametrize(
    ("name", "index", "env", "message"),
    [
        ("ok", "5", {}, "plugin index '5' from the arguments must be exactly two digits"),
        ("ok", "100", {}, "exactly two digits"),
        ("ok", "1a", {}, "exactly two digits"),
        ("ok", "\u0660\u0661", {}, "exactly two digits"),  # non-ASCII digits
        (None, "10", {"NRI_PLUGIN_NAME": "bad name"}, "from NRI_PLUGIN_NAME must be non-empty"),
        ("a/b", "10", {}, r"must be non-empty and match \[A-Za-z0-9_\.\+-\]\+"),
        (None, "10", {}, "no plugin name: give one, set NRI_PLUGIN_NAME"),
        ("ok", None, {}, "no plugin index: give one, set NRI_PLUGIN_IDX"),
    ],
)
def test_invalid_or_missing_identity_is_refused(
    name: str | None, index: str | None, env: dict[str, str], message: str
) -> None:
    with pytest.raises(IdentityError, match=message):
        resolve_identity(name, index, environ=env, argv0="/usr/bin/python3")


def test_program_names() -> None:
    assert parse_program_name("/opt/nri/plugins/10-my-plugin") == ("10", "my-plugin")
    assert parse_program_name("10-") is None
    assert parse_program_name("1-x") is None
    assert parse_program_name("plugin") is None


@given(
    st.text(alphabet="ABCxyz019_.+-", min_size=1, max_size=20),
    st.from_regex(r"[0-9]{2}", fullmatch=True),
)
def test_valid_identities_round_trip_through_argv0(name: str, index: str) -> None:
    assert resolve_identity(environ={}, argv0=f"/p/{index}-{name}") == PluginIdentity(name, index)
