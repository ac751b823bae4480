"""Small helpers for generated protobuf messages."""

from __future__ import annotations

from typing import TypeVar

from google.protobuf.message import Message

M = TypeVar("M", bound=Message)


def has_field(message: Message, name: str) -> bool:
    """``message.HasField(name)`` for a field name only known at run time."""
    return message.HasField(name)


def copy_of(message: M) -> M:
    """A deep copy of ``message``."""
    out = type(message)()
    out.CopyFrom(message)
    return out
