"""Reading sysfs attribute files: each read is one open/read/close, errors name the file."""

from __future__ import annotations

import errno
import os

from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.ports.hardware import HardwareDiscoveryError

_QUOTE_LIMIT = 400
_CHUNK = 65536
# Errors that mean "this attribute is not supported here" rather than "the tree is broken".
_UNSUPPORTED = {
    errno.ENOENT,
    errno.ENOTDIR,
    errno.ENODEV,
    errno.EOPNOTSUPP,
    errno.EINVAL,
    errno.EIO,
}


def quote(content: str) -> str:
    """``repr`` of file content, shortened for very long files."""
    if len(content) > _QUOTE_LIMIT:
        return repr(content[:_QUOTE_LIMIT]) + f" ... ({len(content)} characters)"
    return repr(content)


class SysfsFiles:
    """Typed access to the attribute files under one sysfs root.

    Paths are given relative to the root with a leading slash, e.g.
    ``/devices/system/cpu/online``. Strings are used instead of :mod:`pathlib` on purpose:
    discovery reads tens of thousands of files on big machines.
    """

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/")

    def path(self, rel: str) -> str:
        return self.root + rel

    def read(self, rel: str, *, optional: bool = True) -> str | None:
        """File content, or None if it does not exist (or is unsupported) and ``optional``."""
        path = self.root + rel
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as err:
            if err.errno in (errno.ENOENT, errno.ENOTDIR):
                if optional:
                    return None
                raise HardwareDiscoveryError(f"{path}: missing") from None
            raise HardwareDiscoveryError(f"{path}: cannot open: {err.strerror}") from None
        try:
            # sysfs returns an attribute in one read; a short read is the end of the file
            data = os.read(fd, _CHUNK)
            if len(data) == _CHUNK:
                chunks = [data]
                while chunk := os.read(fd, _CHUNK):
                    chunks.append(chunk)
                data = b"".join(chunks)
        except OSError as err:
            if optional and err.errno in _UNSUPPORTED:
                return None
            raise HardwareDiscoveryError(f"{path}: cannot read: {err.strerror}") from None
        finally:
            os.close(fd)
        return data.decode("utf-8", errors="replace")

    def require(self, rel: str) -> str:
        """Content of a file that must exist."""
        text = self.read(rel, optional=False)
        assert text is not None
        return text

    def error(self, rel: str, problem: str, content: str) -> HardwareDiscoveryError:
        return HardwareDiscoveryError(f"{self.root + rel}: {problem}: {quote(content)}")

    def cpuset(self, rel: str, text: str) -> CPUSet:
        """Parse ``text`` (read from ``rel``) as a cpu list."""
        try:
            return CPUSet.parse(text)
        except CPUSetError:
            raise self.error(rel, "not a cpu list", text) from None

    def integer(self, rel: str, text: str) -> int:
        """Parse ``text`` (read from ``rel``) as a decimal integer (may be negative)."""
        try:
            return int(text.strip(), 10)
        except ValueError:
            raise self.error(rel, "not an integer", text) from None

    def read_int(self, rel: str, *, optional: bool = True) -> int | None:
        text = self.read(rel, optional=optional)
        return None if text is None else self.integer(rel, text)

    def read_cpuset(self, rel: str, *, optional: bool = True) -> CPUSet | None:
        text = self.read(rel, optional=optional)
        return None if text is None else self.cpuset(rel, text)

    def list_dir(self, rel: str) -> list[str] | None:
        """Entry names of a directory, or None if it does not exist."""
        try:
            return os.listdir(self.root + rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            raise HardwareDiscoveryError(
                f"{self.root + rel}: cannot list: {err.strerror}"
            ) from None
