"""Reading and writing host control files, remembering what was there to put it back."""

from __future__ import annotations

import contextlib
import json
import os
import stat

from nrirp.domain.ports.host_control import HostControlError


def read_text(path: str) -> str | None:
    """The file's content without surrounding whitespace, ``None`` if it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def read_int(path: str) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def unwritable(path: str) -> str | None:
    """Why ``path`` cannot be written (missing, read-only attribute, read-only mount), or
    ``None``. A sysfs attribute without a store method has no write bits (root or not), so
    the mode says what root's ``access()`` would not."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"missing: {path}"
    except OSError as exc:
        return f"cannot stat {path}: {exc.strerror}"
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return f"read-only: {path}"
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return f"read-only file system: {path}"
    except OSError:
        pass
    if not os.access(path, os.W_OK):
        return f"not writable: {path}"
    return None


def write_text(path: str, value: str) -> None:
    """Write ``value`` to an existing file (as sysfs and procfs take it: one write)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except FileNotFoundError:
        raise HostControlError(f"{path} does not exist") from None
    except OSError as exc:
        raise HostControlError(f"cannot open {path}: {exc.strerror}") from None
    try:
        os.write(fd, value.encode())
    except OSError as exc:
        raise HostControlError(f"cannot write {value!r} to {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def read_journal(path: str) -> object:
    """What a journal file holds (parsed JSON), or ``None`` when it is missing or unreadable
    (nothing to give back)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_journal(path: str, data: object) -> None:
    """Replace the journal at ``path`` with ``data`` in one step (a crash leaves the old one
    or the new one); raises ``OSError``."""
    temporary = path + ".new"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(temporary, path)


class TrackedFiles:
    """Files written on the host, each with the value it had before the first write.

    :meth:`set` writes only when the value differs from what is there (as last written or
    found); :meth:`reset` writes the original back; :meth:`restore` resets every file.
    ``journal``: a file (in the daemon's state directory) where the originals are kept as
    soon as they are known, so that a daemon killed without restoring finds them again at its
    next start and can still give the host its own values back; removed once restored."""

    def __init__(self, journal: str | None = None) -> None:
        self.originals: dict[str, str] = {}
        self.current: dict[str, str] = {}
        self._journal = journal
        if journal is not None:
            found = read_journal(journal)
            if isinstance(found, dict):
                self.originals = {str(k): str(v) for k, v in found.items()}

    def set(self, path: str, value: str) -> None:
        if path not in self.originals:
            found = read_text(path)
            if found is None:
                raise HostControlError(f"cannot read {path}")
            self.originals[path] = found
            self.current[path] = found
            self._save()
        if path not in self.current:  # an original from the journal: what is there now?
            self.current[path] = read_text(path) or ""
        if self.current[path] == value:
            return
        write_text(path, value)
        self.current[path] = value

    def original(self, path: str) -> str | None:
        return self.originals.get(path)

    def reset(self, path: str) -> None:
        original = self.originals.get(path)
        if original is None:
            return
        if self.current.get(path) != original:
            write_text(path, original)
            self.current[path] = original

    def paths(self) -> list[str]:
        return list(self.originals)

    def restore(self) -> list[str]:
        """Every original back; returns the failures (one line each). Once all are back, the
        journal is removed."""
        problems = []
        for path in self.paths():
            try:
                if path not in self.current:  # known from the journal only
                    self.current[path] = read_text(path) or ""
                self.reset(path)
            except HostControlError as exc:
                problems.append(str(exc))
        if not problems and self._journal is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._journal)
        return problems

    def _save(self) -> None:
        if self._journal is None:
            return
        try:
            write_journal(self._journal, self.originals)
        except OSError as exc:
            why = exc.strerror or exc
            raise HostControlError(
                f"cannot keep the original values in {self._journal}: {why}"
            ) from None


def raise_problems(what: str, problems: list[str]) -> None:
    if problems:
        raise HostControlError(f"{what}: " + "; ".join(problems))
