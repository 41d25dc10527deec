"""Loader for the ArDoCo benchmark (architecture documentation text -> component model), as architecture tasks.

Layout under ``<data_dir>/ardoco``: ``<project>/text_<year>/<name>.txt`` (the software architecture documentation,
one sentence per line), ``<project>/model_<year>/uml/*.uml`` (Papyrus UML: ``uml:Component``, ``uml:Interface``,
``interfaceRealization`` = a component provides an interface, ``uml:Usage`` = a component requires one) and
``<project>/goldstandards/goldstandard_sad_<year>-sam_<year>[_UME].csv`` (sentence <-> model element links, and
model elements the text never mentions).

The reference is PlantUML generated from the UML model: every component and interface, ``C - I`` for a provided
interface and ``C ..> I : uses`` for a required one. ``references.extra`` keeps the model as data
(``components``, ``interfaces``, ``provides``, ``requires``, the derived component-to-component ``component_edges``,
``unmentioned_elements`` and ``trace_links``) so metrics need not re-parse the diagram.

>>> [t.id for t in load(Path("/data/ardoco"))]
['ardoco/bigbluebutton', 'ardoco/jabref', 'ardoco/mediastore', 'ardoco/teammates', 'ardoco/teastore']
"""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from pydantic import BaseModel, Field

from sysmo.benchmarks.paths import dataset_file, read_dataset_text
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task, TaskInputs, TaskKind, TaskReferences
from sysmo.errors import TaskError
from sysmo.log import get_logger

FAMILY = "ardoco"
XMI_TYPE = "{http://www.omg.org/spec/XMI/20131001}type"
XMI_ID = "{http://www.omg.org/spec/XMI/20131001}id"
log = get_logger(__name__)


class ComponentModel(BaseModel):
    """The repository view of an architecture: components, interfaces, and who provides / requires what (by name)."""

    name: str = ""
    components: list[str] = Field(default_factory=list)
    interfaces: dict[str, list[str]] = Field(default_factory=dict)  # interface -> operation names
    provides: list[tuple[str, str]] = Field(default_factory=list)  # (component, interface)
    requires: list[tuple[str, str]] = Field(default_factory=list)  # (component, interface or component)
    n_usages: int = 0  # uml:Usage elements as stored (duplicates included)
    ids: dict[str, str] = Field(default_factory=dict)  # xmi:id -> element name

    def component_edges(self) -> list[tuple[str, str]]:
        """Component -> component dependencies: A requires an interface that B provides (or requires B directly)."""
        providers: dict[str, set[str]] = {}
        for component, interface in self.provides:
            providers.setdefault(interface, set()).add(component)
        edges: set[tuple[str, str]] = set()
        for client, supplier in self.requires:
            targets = providers.get(supplier, set()) if supplier in self.interfaces else {supplier}
            edges.update((client, t) for t in targets if t != client)
        return sorted(edges)


def parse_uml(path: Path) -> ComponentModel:
    """A Papyrus/Eclipse UML2 XMI file -> ComponentModel."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise TaskError(f"{path} is not valid UML XMI: {exc}") from exc
    model = ComponentModel(name=root.get("name", ""))
    elements = [e for e in root.iter() if e.get(XMI_TYPE) in ("uml:Component", "uml:Interface")]
    model.ids = {e.get(XMI_ID, ""): e.get("name", "") for e in elements}
    component_ids: set[str] = set()
    for e in elements:
        if e.get(XMI_TYPE) == "uml:Component":
            model.components.append(e.get("name", ""))
            component_ids.add(e.get(XMI_ID, ""))
        else:
            model.interfaces[e.get("name", "")] = [op.get("name", "") for op in e.findall("ownedOperation")]
    provides: set[tuple[str, str]] = set()
    requires: set[tuple[str, str]] = set()
    for e in root.iter():
        client, supplier = e.get("client"), e.get("supplier")
        if client not in model.ids or supplier not in model.ids:
            continue
        pair = (model.ids[client], model.ids[supplier])
        if e.tag == "interfaceRealization":
            provides.add(pair)
        elif e.get(XMI_TYPE) == "uml:Usage":
            model.n_usages += 1
            requires.add(pair)
    model.provides, model.requires = sorted(provides), sorted(requires)
    return model


def _alias(prefix: str, name: str, taken: set[str]) -> str:
    base = prefix + (re.sub(r"\W+", "_", name).strip("_") or "x")
    alias, n = base, 2
    while alias in taken:
        alias, n = f"{base}_{n}", n + 1
    taken.add(alias)
    return alias


def to_plantuml(model: ComponentModel, title: str) -> str:
    """A PlantUML component diagram of the model (components, interfaces, provided and required interfaces)."""
    taken: set[str] = set()
    comp = {c: _alias("c_", c, taken) for c in model.components}
    iface = {i: _alias("i_", i, taken) for i in model.interfaces}
    quote = lambda s: s.replace('"', "'")  # noqa: E731 - PlantUML has no escape for " inside a quoted name
    lines = ["@startuml", f"title {quote(title)}", ""]
    lines += [f'component "{quote(c)}" as {a}' for c, a in comp.items()]
    lines += [f'interface "{quote(i)}" as {a}' for i, a in iface.items()]
    lines += [""] + [f"{comp[c]} - {iface[i]}" for c, i in model.provides if c in comp and i in iface]
    for c, s in model.requires:
        target = iface.get(s) or comp.get(s)
        if c in comp and target:
            lines.append(f"{comp[c]} ..> {target} : uses")
    lines.append("@enduml")
    return "\n".join(lines) + "\n"


def _latest(folder: Path, prefix: str) -> Path | None:
    candidates = sorted(p for p in folder.glob(f"{prefix}_*") if p.is_dir())
    return candidates[-1] if candidates else None


def _csv_rows(path: Path, root: Path, task: str) -> list[list[str]]:
    if not path.is_file():
        return []
    with dataset_file(root, path, task=task).open(newline="", encoding="utf-8") as fh:
        return [row for row in list(csv.reader(fh))[1:] if row]


def load_project(folder: Path, root: Path | None = None) -> Task:
    """One project folder -> an architecture task; every file read must stay inside ``root`` (default: the folder)."""
    project = folder.name
    root = root or folder
    dataset_file(root, folder, task=project)
    model_dir, text_dir = _latest(folder, "model"), _latest(folder, "text")
    umls = sorted((model_dir / "uml").glob("*.uml")) if model_dir else []
    texts = sorted(text_dir.glob("*.txt")) if text_dir else []
    if not umls or not texts:
        raise TaskError(f"ardoco project {folder} needs model_<year>/uml/*.uml and text_<year>/*.txt")
    for path in (umls[0], *texts):
        dataset_file(root, path, task=project)
    model = parse_uml(umls[0])
    readme = folder / "README.md"
    heading = (read_dataset_text(root, readme, task=project).splitlines() or [""])[0] if readme.is_file() else ""
    name = re.sub(r"^#\s*|\s*Statistics.*$", "", heading).strip() or project
    sad_year, sam_year = text_dir.name.split("_", 1)[1], model_dir.name.split("_", 1)[1]  # type: ignore[union-attr]
    gold = folder / "goldstandards" / f"goldstandard_sad_{sad_year}-sam_{sam_year}.csv"
    links = [(model.ids.get(r[0], r[0]), int(r[1])) for r in _csv_rows(gold, root, project)
             if len(r) >= 2 and r[1].strip().isdigit()]
    unmentioned = sorted({model.ids.get(r[0], r[0])
                          for r in _csv_rows(gold.with_name(gold.stem + "_UME.csv"), root, project)})
    text = "\n".join(t.read_text(encoding="utf-8").strip() for t in texts) + "\n"
    reference = Artifact(language=Language.PLANTUML, files={f"{project}.puml": to_plantuml(model, f"{name} architecture")})
    return Task(
        id=f"{FAMILY}/{project}",
        benchmark=FAMILY,
        kind=TaskKind.ARCHITECTURE,
        title=f"{name} architecture from its documentation",
        inputs=TaskInputs(requirement=text),
        references=TaskReferences(
            model=reference,
            extra={
                "components": model.components,
                "interfaces": model.interfaces,
                "provides": model.provides,
                "requires": model.requires,
                "component_edges": model.component_edges(),
                "unmentioned_elements": unmentioned,
                "trace_links": links,
                "uml_file": str(umls[0]),
            },
        ),
        labels={
            "project": project,
            "n_components": len(model.components),
            "n_interfaces": len(model.interfaces),
            "n_usages": model.n_usages,
            "n_sentences": sum(1 for line in text.splitlines() if line.strip()),
            "n_trace_links": len(links),
            "text_year": sad_year,
            "model_year": sam_year,
            "text_license_readme": str(text_dir / "README.md"),  # type: ignore[operator]
        },
    )


def load(root: Path) -> list[Task]:
    """Every project folder under ``root`` (one with a ``model_*`` folder), sorted by id."""
    folders = sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("model_*")))
    tasks = [load_project(f, root) for f in folders]
    log.debug("ardoco.loaded", n=len(tasks))
    return tasks
