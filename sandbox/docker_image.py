"""The tools image of the docker backend, built from this machine's own files: no image registry is needed.

The image is a root file system holding only what SANY, TLC and PlantUML run on: the host's Java (its
home without jmods, headers and sources, and the ``/etc`` folder its configuration links into), the shared
libraries those binaries load (``ldd``, plus fontconfig, which the JVM opens by name), DejaVu fonts and their
fontconfig files, ``sh`` and a few coreutils for commands given as shell lines, and synthesized
passwd/group/hosts files. The tool jars are not in it: each run bind-mounts them read-only at
``/opt/sysmo-tools`` as the local backends show them. It is imported with ``docker import`` semantics
(a tar stream through the engine API), runs as nobody, with ``/box`` as its working dir.

>>> build_image(docker.from_env())   # `sysmo tools image build`
'sysmo-tools:local'
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

from sysmo.errors import SandboxError
from sysmo.log import get_logger
from sysmo.sandbox.base import BOX, NOBODY, SYNTHETIC_ETC, TOOLS_INSIDE

log = get_logger(__name__)

DEFAULT_IMAGE = "sysmo-tools:local"
# ``timeout`` is every container's wall clock (``docker_backend.WALL_CLOCK``): it kills the command inside even when
# the sysmo that started it is gone
COMMANDS = ("sh", "cat", "ls", "id", "grep", "mkdir", "tr", "touch", "sleep", "env", "head", "tail", "rm", "wc",
            "cp", "mv", "echo", "true", "false", "test", "dirname", "basename", "sed", "timeout")
# what an image built by this version holds, in its environment: an image without it lacks ``timeout`` and is refused
IMAGE_MARK = "SYSMO_IMAGE=2"
BY_NAME = ("libfontconfig.so.1", "libfreetype.so.6")  # opened with dlopen by the JVM's font code: no ldd entry
JAVA_LEFT_OUT = ("jmods", "include", "man", "docs", "demo", "legal", "lib/src.zip", "lib/ct.sym")
FONTS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/etc/fonts"))
LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def _ldd(binary: Path) -> set[Path]:
    """The shared libraries (and the loader) ``binary`` loads, as ``ldd`` resolves them here."""
    try:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {Path(os.path.normpath(m.group(1))) for line in out.splitlines() if (m := LDD_LINE.search(line))}


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def _library_by_name(name: str) -> Path | None:
    """Where the loader finds library ``name`` for this machine's word size (``ldconfig -p``)."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = [line.strip() for line in out.splitlines() if line.strip().startswith(name + " ")]
    found.sort(key=lambda line: "64" not in line.split("=>")[0])  # the 64-bit build first
    return Path(found[0].rsplit("=>", 1)[1].strip()) if found else None


def _through_top_links(path: Path) -> Path:
    """``path`` with a top-level link (merged /usr: ``/lib64`` -> ``usr/lib64``) replaced by its target."""
    parts = path.parts
    if len(parts) > 1 and Path("/", parts[1]).is_symlink():
        return Path("/", os.readlink(Path("/", parts[1])), *parts[2:])
    return path


def _hops(path: Path) -> set[Path]:
    """``path`` and every link it goes through to its file (``/usr/lib64/ld-linux-x86-64.so.2`` -> ...)."""
    found: set[Path] = set()
    current = _through_top_links(Path(os.path.normpath(path)))
    for _ in range(40):
        found.add(current)
        if not current.is_symlink():
            break
        current = _through_top_links(Path(os.path.normpath(current.parent / os.readlink(current))))
    return found


def java_home(java: str) -> Path:
    """The Java installation ``java`` belongs to (``/usr/bin/java`` resolves through the alternatives)."""
    found = shutil.which(java) or java
    return Path(os.path.realpath(found)).parent.parent


def image_files(java: str) -> set[Path]:
    """Every host path the image holds (files and symlinks; folders are made as needed)."""
    home = java_home(java)
    if not (home / "bin" / "java").is_file():
        raise SandboxError(f"no Java installation found for {java!r}; install openjdk-17-jre-headless or set "
                           "tools.java")
    left_out = {home / part for part in JAVA_LEFT_OUT}
    files: set[Path] = set()
    elves: set[Path] = set()
    for root, dirs, names in os.walk(home):
        dirs[:] = [d for d in dirs if Path(root, d) not in left_out]
        for name in names:
            path = Path(root, name)
            if path in left_out:
                continue
            files.add(path)
            if path.is_symlink():
                target = Path(os.path.realpath(path))  # the conf files link into /etc/java-17-openjdk
                if not target.is_relative_to("/etc/ssl"):  # cacerts: the tools need no TLS, the host's CAs stay out
                    files.add(target)
            elif _is_elf(path):
                elves.add(path)
    for command in COMMANDS:
        found = shutil.which(command, path="/usr/bin:/bin")
        if found:
            files.add(Path(found))
            elves.add(Path(os.path.realpath(found)))
            files.add(Path(os.path.realpath(found)))
    for name in BY_NAME:
        library = _library_by_name(name)
        if library is not None:
            elves.add(Path(os.path.realpath(library)))
            files.add(library)
    for elf in sorted(elves):
        for library in _ldd(elf):
            files.add(library)
            files.add(Path(os.path.realpath(library)))
    for folder in FONTS:
        if folder.is_dir():
            for found in folder.rglob("*"):
                if found.is_file() or found.is_symlink():
                    files |= {found, Path(os.path.realpath(found))}  # fontconfig's conf.d links to conf.avail
    return {hop for f in files for hop in _hops(f)
            if (hop.exists() or hop.is_symlink()) and not hop.is_relative_to("/etc/ssl")}


def _add_dir(tar: tarfile.TarFile, name: str, made: set[str], mode: int = 0o755, uid: int = 0) -> None:
    parts = name.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        if sub and sub not in made:
            info = tarfile.TarInfo(sub)
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode if i == len(parts) else 0o755, 0, 0
            if i == len(parts):
                info.uid = info.gid = uid
            tar.addfile(info)
            made.add(sub)


def root_filesystem(java: str) -> bytes:
    """The image's root file system as an uncompressed tar archive."""
    buffer = io.BytesIO()
    made: set[str] = set()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for link in ("bin", "sbin", "lib", "lib64", "lib32"):  # merged /usr: keep the host's top-level links
            path = Path("/") / link
            if path.is_symlink():
                info = tarfile.TarInfo(link)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
                tar.addfile(info)
                made.add(link)
        for folder, mode, owner in (("tmp", 0o1777, 0), ("box", 0o755, NOBODY), (TOOLS_INSIDE, 0o755, 0),
                                    ("proc", 0o755, 0), ("dev", 0o755, 0), ("sys", 0o755, 0), ("etc", 0o755, 0)):
            _add_dir(tar, folder, made, mode, owner)
        for path in sorted(image_files(java), key=str):
            name = str(path).lstrip("/")
            if any(name == m or name.startswith(m + "/") for m in ("bin", "sbin", "lib", "lib64", "lib32")
                   if m in made and Path("/", m).is_symlink()):
                continue  # reached through a top-level link: stored under its /usr path instead
            if name in made or any(name.startswith(m + "/") for m in made if Path("/", m).is_symlink()):
                continue
            _add_dir(tar, str(Path(name).parent), made)
            made.add(name)
            info = tar.gettarinfo(str(path), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isreg():
                with open(path, "rb") as handle:
                    tar.addfile(info, handle)
            elif info.issym():
                tar.addfile(info)
        for dest, text in SYNTHETIC_ETC.items():
            if dest.lstrip("/") in made:
                continue
            data = text.encode()
            info = tarfile.TarInfo(dest.lstrip("/"))
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def build_image(client: Any, tag: str = DEFAULT_IMAGE, java: str = "java") -> str:
    """Build (or rebuild) the tools image under ``tag`` from this machine's Java and libraries; returns the tag."""
    start = time.monotonic()
    home = java_home(java)
    data = root_filesystem(java)
    repository, _, version = tag.partition(":")
    changes = [f"ENV PATH={home}/bin:/usr/bin:/bin", "ENV LANG=C.UTF-8", f"ENV JAVA_HOME={home}",
               f"ENV {IMAGE_MARK}", f"USER {NOBODY}:{NOBODY}", f"WORKDIR {BOX}"]
    try:
        client.api.import_image_from_data(data, repository=repository, tag=version or "latest", changes=changes)
    except Exception as exc:  # noqa: BLE001 - docker.errors.APIError or a connection error
        raise SandboxError(f"the Docker engine could not import the tools image: {exc}") from exc
    log.info("docker.image_built", tag=tag, megabytes=round(len(data) / 1e6, 1),
             seconds=round(time.monotonic() - start, 1))
    return tag
