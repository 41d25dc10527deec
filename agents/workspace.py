"""The openhands agent's workspace: a flat directory of files on disk, one per attempt, that the model edits.

The runner gives each attempt ``<experiment>/artifacts/<attempt>/workspace/`` (beside the rounds' artifacts,
``round<i>/``); ``sysmo attempt`` and tests get a private temporary directory, removed when the attempt ends.
Every path the model gives is confined to that directory: an absolute path, a ``..``, a directory part or a
symbolic link (whether it leads out of the workspace or not) is refused with a one-line ``WorkspaceError``
that the agent returns as the tool's observation. Files are opened relative to the workspace's directory
descriptor with ``O_NOFOLLOW``, so a link planted between the check and the open is not followed either.

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
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

MAX_FILE_BYTES = 1_000_000  # one workspace file; a model larger than this is not a model
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
            pointed = Path(os.readlink(target))
            resolved = (self.root / pointed).resolve()
            if not resolved.is_relative_to(self.root.resolve()):
                raise WorkspaceError(f"{name!r} is a symbolic link leading out of the workspace (to {pointed}); "
                                     "it is not followed")
            raise WorkspaceError(f"{name!r} is a symbolic link; the workspace holds regular files only")
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceError(f"{name!r} is not a regular file")
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
        """An empty workspace (what an earlier run of the same attempt left is removed)."""
        if self.root.is_symlink():
            raise WorkspaceError(f"the workspace {self.root} is a symbolic link")
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True, mode=0o700)

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
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise WorkspaceError(f"{name!r} is not a regular file")
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"{name!r} is larger than {MAX_FILE_BYTES} bytes")
        return data.decode("utf-8", errors="replace")

    def write(self, path: object, content: str) -> str:
        """Create or overwrite a file; returns its name."""
        name = self.name_of(path)
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"the content is larger than {MAX_FILE_BYTES} bytes; write the model only")
        with self._directory() as root:
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=root)
            except OSError as exc:
                raise WorkspaceError(_refusal(name, exc)) from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return name

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


def _refusal(name: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return f"{name!r} is a symbolic link; the workspace holds regular files only"
    if exc.errno == errno.EISDIR:
        return f"{name!r} is a directory, not a file"
    return f"{name!r} cannot be opened ({exc.strerror})"
