"""``DirectoryResourceExport``: the ResourceExport port as directories under the state dir."""

from __future__ import annotations

import os
import re
import shutil

from nrirp.domain.hostcontrol.exports import EXPORT_FILE
from nrirp.domain.ports.host_control import HostControlError

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class DirectoryResourceExport:
    """``<root>/<container id>/resources.sh`` (the reference keeps it in the container's
    directory of its state dir, ``containers/<id>/``), written atomically, mode 0644."""

    def __init__(self, root: str) -> None:
        self.root = root

    def location(self, container_id: str) -> str:
        if not _ID.fullmatch(container_id):
            raise HostControlError(f"container id {container_id!r} cannot name a directory")
        return os.path.join(self.root, container_id)

    def write(self, container_id: str, content: str) -> None:
        directory = self.location(container_id)
        path = os.path.join(directory, EXPORT_FILE)
        temporary = path + ".new"
        try:
            os.makedirs(directory, mode=0o755, exist_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, content.encode())
            finally:
                os.close(fd)
            os.replace(temporary, path)
        except OSError as exc:
            raise HostControlError(f"cannot write {path}: {exc.strerror}") from None

    def remove(self, container_id: str) -> None:
        directory = self.location(container_id)
        try:
            shutil.rmtree(directory)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise HostControlError(f"cannot remove {directory}: {exc.strerror}") from None
