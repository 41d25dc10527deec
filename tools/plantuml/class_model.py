"""A typed class-diagram model (classes, members, relationships) parsed from PlantUML, for metrics and graphs.

>>> from sysmo.tools.plantuml.parse_class import parse_class_diagram
>>> model = parse_class_diagram("@startuml\\nclass Car\\nCar *-- Wheel\\n@enduml")
>>> model.relationships[0].type, model.get("Wheel").implicit
(<RelationType.COMPOSITION: 'composition'>, True)
"""

from __future__ import annotations

from enum import StrEnum

import networkx as nx
from pydantic import BaseModel, Field


class Visibility(StrEnum):
    PUBLIC = "public"  # +
    PRIVATE = "private"  # -
    PROTECTED = "protected"  # #
    PACKAGE = "package"  # ~
    UNSPECIFIED = "unspecified"


VISIBILITY_MARKS = {
    "+": Visibility.PUBLIC,
    "-": Visibility.PRIVATE,
    "#": Visibility.PROTECTED,
    "~": Visibility.PACKAGE,
}


class ClassKind(StrEnum):
    CLASS = "class"
    ABSTRACT_CLASS = "abstract class"
    INTERFACE = "interface"
    ENUM = "enum"
    ANNOTATION = "annotation"
    ENTITY = "entity"
    OTHER = "other"  # struct, record, exception, protocol, metaclass, ...


class RelationType(StrEnum):
    ASSOCIATION = "association"
    AGGREGATION = "aggregation"
    COMPOSITION = "composition"
    DEPENDENCY = "dependency"
    GENERALIZATION = "generalization"
    REALIZATION = "realization"


class Attribute(BaseModel):
    name: str
    type: str | None = None
    visibility: Visibility = Visibility.UNSPECIFIED
    static: bool = False
    default: str | None = None
    line: int | None = None


class Parameter(BaseModel):
    name: str | None = None  # None when only a type is given: ``void set(int)``
    type: str | None = None


class Method(BaseModel):
    name: str
    return_type: str | None = None
    parameters: list[Parameter] = Field(default_factory=list)
    visibility: Visibility = Visibility.UNSPECIFIED
    static: bool = False
    abstract: bool = False
    line: int | None = None


class UMLClass(BaseModel):
    """A classifier. ``name`` is what the diagram shows; ``alias`` the short name relationships may use."""

    name: str
    alias: str | None = None
    kind: ClassKind = ClassKind.CLASS
    stereotypes: list[str] = Field(default_factory=list)
    generics: list[str] = Field(default_factory=list)  # type parameters: class Map<K, V> -> ["K", "V"]
    attributes: list[Attribute] = Field(default_factory=list)
    methods: list[Method] = Field(default_factory=list)
    enum_values: list[str] = Field(default_factory=list)
    package: str | None = None  # the enclosing package/namespace path, "a.b"
    implicit: bool = False  # only named by a relationship, never declared
    line: int | None = None


class Relationship(BaseModel):
    """One relationship, normalised so that the ends mean the same whichever way the arrow was written.

    - generalization / realization: ``source`` is the specific class (child, implementer), ``target`` the general one;
    - composition / aggregation: ``source`` is the whole (the diamond end), ``target`` the part;
    - dependency / directed association: ``source`` is the tail, ``target`` the arrowhead end;
    - undirected or two-headed association: the ends as written, ``directed`` False.
    Multiplicities travel with their ends.
    """

    type: RelationType
    source: str
    target: str
    label: str | None = None
    source_multiplicity: str | None = None
    target_multiplicity: str | None = None
    directed: bool = True
    arrow: str = ""  # the arrow as written, e.g. "<|--" or "-left->"
    line: int | None = None


class ClassDiagram(BaseModel):
    classes: list[UMLClass] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)
    packages: list[str] = Field(default_factory=list)

    def get(self, name: str) -> UMLClass | None:
        """The class named (or aliased) ``name``."""
        return next((c for c in self.classes if c.name == name or c.alias == name), None)

    def names(self) -> list[str]:
        return [c.name for c in self.classes]

    def to_networkx(self) -> nx.MultiDiGraph:
        """Classes as nodes (with their model dumped as attributes), relationships as typed edges."""
        graph = nx.MultiDiGraph()
        for cls in self.classes:
            graph.add_node(cls.name, **cls.model_dump(exclude={"name"}))
        for rel in self.relationships:
            graph.add_edge(rel.source, rel.target, **rel.model_dump(exclude={"source", "target"}))
        return graph
