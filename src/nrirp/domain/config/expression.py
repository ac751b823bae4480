"""Match expressions (``key`` / ``operator`` / ``values``) as the reference evaluates them."""

from __future__ import annotations

import enum
from collections.abc import Iterator

import attrs

from nrirp.domain.config.errors import Issue
from nrirp.domain.config.keys import ref
from nrirp.domain.config.validation import at


class Operator(enum.StrEnum):
    """Expression operators, spelled as the reference spells them."""

    EQUALS = "Equals"
    NOT_EQUAL = "NotEqual"
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    NOT_EXISTS = "NotExists"
    ALWAYS_TRUE = "AlwaysTrue"
    MATCHES = "Matches"
    MATCHES_NOT = "MatchesNot"
    MATCHES_ANY = "MatchesAny"
    MATCHES_NONE = "MatchesNone"

    @classmethod
    def _missing_(cls, value: object) -> Operator | None:
        # the reference's code spells it NotExist (its documentation says NotExists)
        return cls.NOT_EXISTS if value == "NotExist" else None


_SINGLE_VALUE = {Operator.EQUALS, Operator.NOT_EQUAL, Operator.MATCHES, Operator.MATCHES_NOT}
_NO_VALUES = {Operator.EXISTS, Operator.NOT_EXISTS, Operator.ALWAYS_TRUE}


@attrs.frozen(kw_only=True)
class Expression:
    """``key`` names what is tested (``name``, ``namespace``, ``qosclass``, ``labels/app``,
    ``pod/labels/app``...), ``operator`` how, ``values`` against what (globs for Matches*)."""

    key: str = attrs.field(default="", metadata=ref("key"))
    operator: Operator = attrs.field(metadata=ref("operator"))
    values: tuple[str, ...] = attrs.field(default=(), metadata=ref("values"))

    def config_problems(self) -> Iterator[Issue]:
        if not self.key and self.operator is not Operator.ALWAYS_TRUE:
            yield at(self, "key", "invalid value '': a key is required")
        count = len(self.values)
        if self.operator in _SINGLE_VALUE and count != 1:
            yield at(
                self, "values", f"operator {self.operator} takes exactly one value, got {count}"
            )
        elif self.operator in _NO_VALUES and count:
            yield at(self, "values", f"operator {self.operator} takes no values, got {count}")


@attrs.frozen(kw_only=True)
class ContainerMatch:
    """A list of expressions (``preserve``: a container matching any one of them is kept)."""

    match_expressions: tuple[Expression, ...] = attrs.field(
        default=(), metadata=ref("matchExpressions")
    )
