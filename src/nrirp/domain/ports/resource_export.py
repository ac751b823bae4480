"""Port: each container's exported allocation (``/.nri-resource-policy/resources.sh``)."""

from __future__ import annotations

from typing import Protocol


class ResourceExport(Protocol):
    """Keeps one small file per container that the container sees through a read-only bind
    mount of its directory.

    - :meth:`location` is the host directory mounted at ``/.nri-resource-policy`` in the
      container (it may not exist until :meth:`write`); the same id gives the same path.
    - :meth:`write` replaces ``resources.sh`` in it atomically (the container never reads
      half a file), creating the directory.
    - :meth:`remove` deletes the directory; nothing happens if it is gone.

    Errors raise ``HostControlError`` naming the path.
    """

    def location(self, container_id: str) -> str: ...

    def write(self, container_id: str, content: str) -> None: ...

    def remove(self, container_id: str) -> None: ...
