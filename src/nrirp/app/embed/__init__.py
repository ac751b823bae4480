"""The embedding API: the resource-manager engine for a host agent (see docs/embedding.md)."""
