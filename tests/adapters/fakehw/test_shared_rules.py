"""Machine specs and policy configs share one set of strict rules: the primitive and enum
hooks of the config converter and the quantity parser for sizes."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from nrirp.adapters.fakehw import MachineSpecError, spec_from_yaml
from nrirp.adapters.fakehw.loading import converter, parse_size
from nrirp.domain.config.converter import STRICT_HOOKS, structure_enum
from nrirp.domain.config.errors import InvalidValue
from nrirp.domain.config.quantity import Quantity, parse_byte_size


@pytest.mark.parametrize("text", ["48K", "48Ki", "48KiB", "48KB", "16G", "1TiB", " 2 M ", "7"])
def test_sizes_are_binary_quantities(text: str) -> None:
    normalized = text.strip().replace(" ", "").removesuffix("B").removesuffix("i")
    expected = Quantity.parse(normalized + ("i" if normalized[-1].isalpha() else "")).int_value()
    assert parse_size(text) == parse_byte_size(text) == expected


@pytest.mark.parametrize(
    ("kind", "value"), [(int, "2"), (int, True), (int, 1.5), (str, 7), (bool, "true")]
)
def test_a_value_the_config_refuses_a_spec_refuses_with_the_same_reason(
    kind: type, value: Any
) -> None:
    with pytest.raises(InvalidValue) as config_refusal:
        STRICT_HOOKS[kind](value, kind)
    with pytest.raises(InvalidValue) as spec_refusal:
        converter.structure(value, kind)
    assert spec_refusal.value.expected == config_refusal.value.expected


def test_a_spec_words_the_refusal_its_own_way() -> None:
    with pytest.raises(MachineSpecError, match=r"expected an integer, got '2' @ \$\.compact"):
        spec_from_yaml("name: x\ncompact: {cores_per_node: '2'}\n")


def test_enumerations_by_value_with_the_choices_listed() -> None:
    class Colour(enum.Enum):
        RED = "red"
        BLUE = "blue"

    assert structure_enum("red", Colour) is converter.structure("red", Colour) is Colour.RED
    with pytest.raises(InvalidValue, match="expected one of 'red', 'blue'"):
        converter.structure("green", Colour)
