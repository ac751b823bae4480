"""The annotation parser for tests that call the domain by hand (the app's compositions wire
the same one): ``container_affinities(pod, ctr, ANNOTATIONS)``, ``ResourceManager(...,
annotation_parser=ANNOTATIONS)``."""

from __future__ import annotations

from nrirp.adapters.documents import YamlAnnotationParser

ANNOTATIONS = YamlAnnotationParser()
