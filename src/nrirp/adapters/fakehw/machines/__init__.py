"""Catalogue machine specs (YAML files named after the machine)."""
