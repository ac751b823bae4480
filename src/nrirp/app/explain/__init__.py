"""Explanations of decisions as documents and text: what ``nrirp explain`` prints, what the
daemon's ``/explain`` serves (docs/explain.md)."""

from nrirp.app.explain.document import EXPLAIN_FORMAT, error_document, explanation_document
from nrirp.app.explain.render import render_explanation

__all__ = ["EXPLAIN_FORMAT", "error_document", "explanation_document", "render_explanation"]
