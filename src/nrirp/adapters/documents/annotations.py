"""The domain's :class:`~nrirp.domain.ports.documents.AnnotationParser`, on the one loader."""

from __future__ import annotations

from typing import Any

from nrirp.adapters.documents.budget import ANNOTATION, Budget
from nrirp.adapters.documents.loader import load_document


class YamlAnnotationParser:
    """Annotation values as YAML within the annotation budget: a few KiB, shallow, and no
    anchors, aliases or tags. Each call parses afresh (callers cache what they derive)."""

    def __init__(self, budget: Budget = ANNOTATION) -> None:
        self.budget = budget

    def parse(self, text: str) -> Any:
        return load_document(text, self.budget)


def annotation_parser() -> YamlAnnotationParser:
    """A parser with the annotation budget (what the compositions wire)."""
    return YamlAnnotationParser()
