"""Adapters: real and fake implementations of the domain's ports."""
