"""Composition root, CLI and the public embedding API."""
