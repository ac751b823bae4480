"""Helpers shared by several commands (not commands themselves)."""
