"""PlantUML tools: check (warm server or batch), render, lint, parse to class and architecture models.

>>> from sysmo.tools.plantuml import check, parse_class_diagram
>>> check("@startuml\\nclass A\\n@enduml").ok
True

The parsers are imported from their modules when first used (PEP 562): checking a diagram does not import
them and networkx, which a command that only checks would pay for at start-up. ``check`` and ``lint`` are
imported at once: they share their names with their modules, which an import of the module would otherwise
bind here in their place.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sysmo.tools.plantuml.check import check, check_batch, render_svg, self_check
from sysmo.tools.plantuml.lint import lint
from sysmo.tools.plantuml.source import diagram_source

# name -> the module that defines it, imported on first use
_HOMES: dict[str, str] = {
    **dict.fromkeys(["ArchEdge", "ArchitectureGraph", "ArchNode", "parse_architecture"], "architecture"),
    **dict.fromkeys(["ClassDiagram", "Relationship", "RelationType", "UMLClass"], "class_model"),
    "parse_class_diagram": "parse_class",
}

__all__ = sorted([*_HOMES, "check", "check_batch", "diagram_source", "lint", "render_svg", "self_check"])

if TYPE_CHECKING:
    from sysmo.tools.plantuml.architecture import ArchEdge, ArchitectureGraph, ArchNode, parse_architecture
    from sysmo.tools.plantuml.class_model import ClassDiagram, Relationship, RelationType, UMLClass
    from sysmo.tools.plantuml.parse_class import parse_class_diagram


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
