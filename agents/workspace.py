"""The openhands agent's workspace: a flat directory of files on disk, one per attempt, that the model edits.

The runner gives each attempt ``<experiment>/artifacts/<attempt>/workspace/`` (beside the rounds' artifacts,
``round<i>/``); ``sysmo attempt`` and tests get a private temporary directory, removed when the attempt ends.
Every path the model gives is confined to that directory: an absolute path, a ``..``, a directory part or a
symbolic link (whether it leads out of the workspace or not) is refused with a one-line ``WorkspaceError``
that the agent returns as the tool's observation. Files are opened relative to the workspace's directory
descriptor with ``O_NOFOLLOW``, so a link planted between the check and the open is not followed either, and
the open file's link count is checked: a hard link (a name planted in the workspace for a file elsewhere) is
neither read nor written through. A refusal names the file, never where a link leads. ``reset`` never fails on
what it finds: the old directory is moved aside and removed, and what cannot be removed is reported in the log.
A file holds at most ``MAX_FILE_BYTES`` and the workspace at most ``MAX_WORKSPACE_BYTES``.

The check runs on the files read back from this directory (``files()``): the language tool gets exactly what
is on disk, in its sandbox (``sysmo.sandbox``), and the workspace at the last check is the attempt's artifact.

>>> ws = Workspace(tmp / "workspace"); ws.reset()
>>> ws.write("Spec.tla", "x == 1\\n"); ws.edit("Spec.tla", "x == 1", "x == 2").startswith("Edited Spec.tla")
True
>>> ws.write("../out.tla", "")
Traceback (most recent call last):
WorkspaceError: '../out.tla' leads out of the workspace (..); give a file name such as Spec.tla
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import uuid
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from sysmo.log import get_logger

log = get_logger(__name__)

MAX_FILE_BYTES = 1_000_000  # one workspace file; a model larger than this is not a model
MAX_WORKSPACE_BYTES = 4_000_000  # every file of the workspace together
CONTEXT_LINES = 2  # lines shown around an edit


class WorkspaceError(ValueError):
    """A request the workspace refuses; the message is the tool's observation (one line)."""


class Workspace:
    """A flat directory of UTF-8 text files; every name is checked by :meth:`name_of`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    # --- paths -------------------------------------------------------------------------------------
    def name_of(self, path: object) -> str:
        """``path`` as a file name of the workspace, or ``WorkspaceError`` saying why it is refused."""
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("give the file's name as `path`, e.g. Spec.tla")
        if "\\" in path or "\x00" in path:
            raise WorkspaceError(f"{path!r} is not a plain file name; give a name such as Spec.tla")
        pure = PurePosixPath(path)
        if pure.is_absolute():
            raise WorkspaceError(f"{path!r} is an absolute path, outside the workspace; "
                                 "give a file name such as Spec.tla")
        if ".." in pure.parts:
            raise WorkspaceError(f"{path!r} leads out of the workspace (..); give a file name such as Spec.tla")
        parts = [p for p in pure.parts if p != "."]
        if len(parts) != 1:
            raise WorkspaceError(f"{path!r} names a directory; the workspace is flat: give a file name "
                                 "such as Spec.tla")
        name = parts[0]
        target = self.root / name
        try:
            info = target.lstat()
        except FileNotFoundError:
            return name
        if stat.S_ISLNK(info.st_mode):
            # where it leads is never said: the message goes to the model, and a host path is not its business
            resolved = (self.root / os.readlink(target)).resolve()
            if not resolved.is_relative_to(self.root.resolve()):
                raise WorkspaceError(f"{name!r} is a symbolic link leading out of the workspace; it is not followed")
            raise WorkspaceError(f"{name!r} is a symbolic link; the workspace holds regular files only")
        _check_regular(name, info)
        return name

    @contextmanager
    def _directory(self) -> Iterator[int]:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)

    # --- the directory -----------------------------------------------------------------------------
    def reset(self) -> None:
        """An empty workspace (what an earlier run of the same attempt left is removed).

        Never fails on what the old directory holds (links, directories, entries appearing while it is removed):
        it is renamed aside first, so the new directory starts empty whatever happens to the old one, then
        removed; what cannot be removed is logged (``workspace.leftover``) and left beside it."""
        if self.root.is_symlink() or self.root.exists():
            stale = self.root.with_name(f".{self.root.name}.old-{uuid.uuid4().hex[:12]}")
            try:
                os.rename(self.root, stale)
            except OSError as exc:
                log.warning("workspace.not_moved", workspace=str(self.root), error=str(exc))
                stale = self.root
            _remove_tree(stale)
        self.root.mkdir(parents=True, mode=0o700, exist_ok=True)
        if self.root.is_symlink() or not self.root.is_dir():
            raise WorkspaceError(f"the workspace {self.root.name} could not be made a directory")

    def files(self) -> dict[str, str]:
        """The workspace's regular files by name (sorted); links, directories and other entries are skipped."""
        if not self.root.is_dir():
            return {}
        out: dict[str, str] = {}
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.is_file(follow_symlinks=False):
                try:
                    out[entry.name] = self.read(entry.name)
                except WorkspaceError:
                    continue
        return out

    def restore(self, files: dict[str, str]) -> None:
        """Make the workspace hold exactly ``files`` (a state restored from a checkpoint)."""
        self.reset()
        for name, text in files.items():
            self.write(name, text)

    # --- file operations ---------------------------------------------------------------------------
    def read(self, path: object) -> str:
        name = self.name_of(path)
        with self._directory() as root:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=root)
            except FileNotFoundError:
                listing = ", ".join(self.names()) or "(none)"
                raise WorkspaceError(f"no file {name!r} in the workspace; it has: {listing}") from None
            except OSError as exc:
                raise WorkspaceError(_refusal(name, exc)) from None
        with os.fdopen(fd, "rb") as handle:
            _check_regular(name, os.fstat(handle.fileno()))  # the file opened, not the name checked before
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"{name!r} is larger than {MAX_FILE_BYTES} bytes")
        return data.decode("utf-8", errors="replace")

    def write(self, path: object, content: str) -> str:
        """Create or overwrite a file; returns its name."""
        name = self.name_of(path)
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"the content is larger than {MAX_FILE_BYTES:,} bytes (the cap of one workspace "
                                 "file); write the model only")
        others = sum(self._sizes(exclude=name).values())
        if others + len(data) > MAX_WORKSPACE_BYTES:
            raise WorkspaceError(f"the workspace would hold more than {MAX_WORKSPACE_BYTES:,} bytes (its other "
                                 f"files hold {others:,}); write the model only")
        with self._directory() as root:
            try:  # no O_TRUNC: a hard link is refused before anything is written through it
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600,
                             dir_fd=root)
            except OSError as exc:
                raise WorkspaceError(_refusal(name, exc)) from None
        with os.fdopen(fd, "wb") as handle:
            _check_regular(name, os.fstat(handle.fileno()))
            handle.truncate(0)
            handle.write(data)
        return name

    def _sizes(self, exclude: str | None = None) -> dict[str, int]:
        """The size of each regular file of the workspace (not following links), but ``exclude``."""
        if not self.root.is_dir():
            return {}
        out: dict[str, int] = {}
        for entry in os.scandir(self.root):
            if entry.name != exclude and entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                if info.st_nlink == 1:  # a hard link is not a workspace file (it is refused when read)
                    out[entry.name] = info.st_size
        return out

    def edit(self, path: object, old: object, new: object) -> str:
        """Replace the one occurrence of ``old`` by ``new``; the observation shows the edited lines.

        ``old`` absent or occurring more than once changes nothing and raises ``WorkspaceError`` saying so."""
        name = self.name_of(path)
        if not isinstance(old, str) or not old:
            raise WorkspaceError("give the exact text to replace as `old_text` (not empty); "
                                 "to write a whole file use write_file")
        if not isinstance(new, str):
            raise WorkspaceError("give the replacement as `new_text` (a string; empty deletes the old text)")
        text = self.read(name)
        count = text.count(old)
        if count == 0:
            raise WorkspaceError(f"the old text does not occur in {name} (nothing changed); read_file it and "
                                 "copy the text exactly, whitespace included")
        if count > 1:
            lines = _occurrence_lines(text, old)
            raise WorkspaceError(f"the old text occurs {count} times in {name}, at lines "
                                 f"{', '.join(map(str, lines))} (nothing changed); include more of the "
                                 "surrounding lines so that it occurs once")
        at = text.index(old)
        edited = text[:at] + new + text[at + len(old):]
        self.write(name, edited)
        first = text.count("\n", 0, at) + 1
        last = first + max(new.count("\n") + (0 if new.endswith("\n") or not new else 1) - 1, 0)
        return f"Edited {name}: lines {first}-{last} now read (with {CONTEXT_LINES} lines around):\n" + \
            _numbered(edited, first - CONTEXT_LINES, last + CONTEXT_LINES)

    def names(self) -> list[str]:
        return sorted(self.files())


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines, start = [], 0
    while (at := text.find(needle, start)) >= 0:
        lines.append(text.count("\n", 0, at) + 1)
        start = at + 1
    return lines


def _numbered(text: str, first: int, last: int) -> str:
    lines = text.splitlines()
    first, last = max(first, 1), min(last, len(lines))
    return "\n".join(f"{i:4d}  {lines[i - 1]}" for i in range(first, last + 1))


def _check_regular(name: str, info: os.stat_result) -> None:
    """Refuse what is not a regular file of the workspace's own: another kind of entry, or a hard link (a file
    with another name elsewhere, whose content is not the workspace's to read or overwrite)."""
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{name!r} is not a regular file")
    if info.st_nlink != 1:
        raise WorkspaceError(f"{name!r} is a hard link (the file has {info.st_nlink} names); the workspace holds "
                             "files of its own only, it is neither read nor written")


def _remove_tree(path: Path) -> None:
    """Remove ``path`` and what it holds, never following links; what cannot be removed is logged, not raised."""
    left: list[str] = []

    def note(_function: object, where: str, _error: object) -> None:
        left.append(where)

    for _ in range(3):  # entries appearing while it is removed (ENOTEMPTY) are taken on the next pass
        left.clear()
        try:
            if os.path.islink(path) or not os.path.isdir(path):
                os.unlink(path)
            elif sys.version_info >= (3, 12):
                shutil.rmtree(path, onexc=note)
            else:
                shutil.rmtree(path, onerror=note)
        except OSError as exc:
            left.append(f"{path}: {exc.strerror}")
        if not os.path.lexists(path):
            return
    log.warning("workspace.leftover", path=str(path), entries=left[:20])


def _refusal(name: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return f"{name!r} is a symbolic link; the workspace holds regular files only"
    if exc.errno == errno.EISDIR:
        return f"{name!r} is a directory, not a file"
    return f"{name!r} cannot be opened ({exc.strerror})"
