"""Documents: the one reader of YAML/JSON text for every input kind, within its budget.

* :func:`load_document` (``loader.py``): text or UTF-8 bytes -> plain data, strict and safe,
  refusing what is over the :class:`Budget` of the input kind (``budget.py``).
* :func:`load_policy_config` (``config.py``): a policy configuration from text, bytes or data.
* :class:`YamlAnnotationParser` (``annotations.py``): the domain's annotation parser port.

Every failure is a :class:`~nrirp.domain.ports.documents.DocumentError`; see
docs/security.md ("Input budget") for the limits.
"""

from nrirp.adapters.documents.annotations import YamlAnnotationParser, annotation_parser
from nrirp.adapters.documents.budget import (
    ANNOTATION,
    BUDGETS,
    CONFIG,
    MACHINE_SPEC,
    WORKLOAD,
    Budget,
)
from nrirp.adapters.documents.config import load_policy_config
from nrirp.adapters.documents.loader import LIBYAML, UnreadableDocument, load_document
from nrirp.domain.ports.documents import DocumentError

__all__ = [
    "ANNOTATION",
    "BUDGETS",
    "CONFIG",
    "LIBYAML",
    "MACHINE_SPEC",
    "WORKLOAD",
    "Budget",
    "DocumentError",
    "UnreadableDocument",
    "YamlAnnotationParser",
    "annotation_parser",
    "load_document",
    "load_policy_config",
]
