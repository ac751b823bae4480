"""Port: reading structured text (YAML/JSON) that the domain is handed, such as pod annotations.

The domain never parses YAML itself. Configs, machine specs and workloads are parsed by the
documents adapter before the domain sees them (the domain receives mappings); annotation
values arrive with the pods at run time, so the domain asks an :class:`AnnotationParser` for
them. Everything that reads a document fails with one error class, :class:`DocumentError`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

MAX_QUOTED = 200
"""At most this many characters of an input are quoted in an error message."""


def clip(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` cut to ``limit`` characters (marked with ``...``) for quoting in a message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def label(text: str, limit: int = MAX_QUOTED) -> str:
    """A name from outside (a container's id or name, a namespace) for a message: as it is
    when printable and short, else its ``repr`` clipped, so that no name can add lines to a
    log or make a message long."""
    if text.isprintable() and len(text) <= limit:
        return text
    return clip(repr(text), limit)


MAX_MESSAGE = 1000
"""At most this many characters of a message made of parts from outside (a refusal's reason)."""


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` as one printable line of at most ``limit`` characters: a character that is not
    printable (a newline, a control character) written as its escape, e.g. ``\\n``. For
    messages that may carry names from outside (a policy's refusal naming a pod)."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return clip(text, limit)


class DocumentError(ValueError):
    """A document that cannot be used: not parseable, over its input budget, or invalid.

    The one error class of document reading: the loaders of configs
    (:class:`~nrirp.domain.config.ConfigError`), machine specs, workloads and annotation
    values raise it or a subclass of it, and nothing else. Messages are bounded: they name the
    place (line and column, or a path in the document) and quote at most
    :data:`MAX_QUOTED` characters of the input.
    """


class AnnotationParser(Hashable, Protocol):
    """Parses one annotation value (YAML, hence also JSON) into plain data.

    Contract for adapters:

    * :meth:`parse` returns plain data: ``None``, ``bool``, ``int``, ``float``, ``str``,
      lists, and dicts with scalar keys (YAML timestamps may come back as ``datetime``
      values); empty text (or only comments) gives ``None``.
    * Anything else raises :class:`DocumentError` with a one-line message of at most a few
      hundred characters (where in the text, what is wrong) and never any other exception,
      whatever the text.
    * An annotation is untrusted input (any pod author writes it): the adapter applies a
      budget before building anything: a size cap, no anchors, aliases or tags (so nothing
      expands), bounded nesting. Refusals are fast and their cost does not depend on what
      the text would have expanded to.
    * It is a pure function of the text: no I/O, safe to call from the pipeline, and the
      same text always gives the same result. The caller may cache results, keyed by the
      parser (hence hashable) and the text; the parser itself need not cache.
    """

    def parse(self, text: str) -> Any: ...


class UnwiredAnnotationParser:
    """The parser used when none is wired: refuses every value (the app's compositions wire
    the documents adapter's; a test or an embedder constructing the domain by hand passes
    one too, see ``nrirp.adapters.documents.annotation_parser``)."""

    def parse(self, text: str) -> Any:
        raise DocumentError(
            "no annotation parser is wired (pass annotation_parser= to ResourceManager)"
        )
