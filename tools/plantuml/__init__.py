"""PlantUML tools: check (warm server or batch), render, lint, parse to class and architecture models.

>>> from sysmo.tools.plantuml import check, parse_class_diagram
>>> check("@startuml\\nclass A\\n@enduml").ok
True
"""

from sysmo.tools.plantuml.architecture import ArchEdge, ArchitectureGraph, ArchNode, parse_architecture
from sysmo.tools.plantuml.check import check, check_batch, render_svg, self_check
from sysmo.tools.plantuml.class_model import ClassDiagram, Relationship, RelationType, UMLClass
from sysmo.tools.plantuml.lint import lint
from sysmo.tools.plantuml.parse_class import parse_class_diagram
from sysmo.tools.plantuml.source import diagram_source

__all__ = [
    "ArchEdge", "ArchNode", "ArchitectureGraph", "ClassDiagram", "RelationType", "Relationship", "UMLClass",
    "check", "check_batch", "diagram_source", "lint", "parse_architecture", "parse_class_diagram", "render_svg",
    "self_check",
]
