"""The element tree of a SysML v2 model (from OpenSysML's OMG Systems Modeling API JSON export), as a small typed model.

``%save x.json`` writes every element and relationship of the session model in the OMG API's JSON form.
This module keeps the elements a modeller names and a metric can compare: packages, definitions and usages
of parts, attributes, ports, items, connections, interfaces, flows, allocations, actions, states,
transitions, requirements, constraints, calculations and cases, each with

- ``kind`` (``ElementKind``: ``part_def``, ``part``, ...) and ``metatype`` (the API's ``@type``);
- ``name`` (declared name, ``None`` when anonymous, e.g. most connections) and ``qualified_name``;
- ``owner``: the id of the nearest enclosing element *of the tree* (containment; memberships, anonymous
  features and the like are skipped over), ``None`` at the top;
- type references where the model states them: ``types`` (feature typing; ``~X`` for a conjugated port),
  ``specializes`` (subclassification of definitions, subsetting of usages), ``redefines``; connector
  ``ends`` as written paths (``tank.fp``); transition ``source``/``target`` state names.

Implied elements (a port definition's conjugate, connector end features, the trigger and succession inside
a transition) are left out. Library types are named by their qualified names (``ScalarValues::Real``),
read from the Turtle export, which carries a stub for each library element the model references. OpenSysML
names library elements by name-based (v5) UUIDs, the same in every session of one kernel binary, so the names
learnt from one export hold for every later model (``LibraryNames``): the Turtle export, a fifth of a valid
model's time in the kernel, is asked for only when the JSON export of a model without errors references a
library element not met before, and the tree is the same either way (a model with errors may reference a
library element its Turtle export has no stub for, so its own export is always read).

>>> tree = element_tree("package P { part def Car { part e : Engine; } part def Engine; }")
>>> [(e.kind.value, e.qualified_name, e.types) for e in tree.elements if e.kind != ElementKind.PACKAGE]
[('part_def', 'P::Car', []), ('part', 'P::Car::e', ['P::Engine']), ('part_def', 'P::Engine', [])]
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.errors import ToolCrashError
from sysmo.log import get_logger
from sysmo.tools.sysml.kernel import KernelRun, OpenSysMLKernel, shared_kernel
from sysmo.contracts.check import CheckResult, Diagnostic, Severity
from sysmo.tools.sysml.validate import model_files, run_files

log = get_logger(__name__)

JSON_EXPORT = "model.json"
TURTLE_EXPORT = "model.ttl"


class ElementKind(StrEnum):
    PACKAGE = "package"
    PART_DEF = "part_def"
    PART = "part"
    ATTRIBUTE_DEF = "attribute_def"
    ATTRIBUTE = "attribute"
    ENUMERATION_DEF = "enumeration_def"
    ENUM_VALUE = "enum_value"
    PORT_DEF = "port_def"
    PORT = "port"
    ITEM_DEF = "item_def"
    ITEM = "item"
    CONNECTION_DEF = "connection_def"
    CONNECTION = "connection"
    INTERFACE_DEF = "interface_def"
    INTERFACE = "interface"
    FLOW_DEF = "flow_def"
    FLOW = "flow"
    ALLOCATION_DEF = "allocation_def"
    ALLOCATION = "allocation"
    ACTION_DEF = "action_def"
    ACTION = "action"
    STATE_DEF = "state_def"
    STATE = "state"
    TRANSITION = "transition"
    REQUIREMENT_DEF = "requirement_def"
    REQUIREMENT = "requirement"
    SATISFY = "satisfy"
    CONSTRAINT_DEF = "constraint_def"
    CONSTRAINT = "constraint"
    CALCULATION_DEF = "calculation_def"
    CALCULATION = "calculation"
    CASE_DEF = "case_def"  # use, analysis and verification cases
    CASE = "case"
    OCCURRENCE_DEF = "occurrence_def"
    OCCURRENCE = "occurrence"
    REFERENCE = "reference"  # a named `ref`, a subject, or a redefinition such as `:>> mass = 1200;`


K = ElementKind
# OMG API @type -> kind; a type not listed here is not part of the tree
KIND_OF_METATYPE: dict[str, ElementKind] = {
    "Package": K.PACKAGE, "LibraryPackage": K.PACKAGE,
    "PartDefinition": K.PART_DEF, "PartUsage": K.PART,
    "AttributeDefinition": K.ATTRIBUTE_DEF, "AttributeUsage": K.ATTRIBUTE,
    "EnumerationDefinition": K.ENUMERATION_DEF, "EnumerationUsage": K.ENUM_VALUE,
    "PortDefinition": K.PORT_DEF, "PortUsage": K.PORT,
    "ItemDefinition": K.ITEM_DEF, "ItemUsage": K.ITEM,
    "ConnectionDefinition": K.CONNECTION_DEF, "ConnectionUsage": K.CONNECTION,
    "InterfaceDefinition": K.INTERFACE_DEF, "InterfaceUsage": K.INTERFACE,
    "FlowDefinition": K.FLOW_DEF, "FlowUsage": K.FLOW, "SuccessionFlowUsage": K.FLOW,
    "AllocationDefinition": K.ALLOCATION_DEF, "AllocationUsage": K.ALLOCATION,
    "ActionDefinition": K.ACTION_DEF, "ActionUsage": K.ACTION, "PerformActionUsage": K.ACTION,
    "AcceptActionUsage": K.ACTION, "SendActionUsage": K.ACTION, "AssignmentActionUsage": K.ACTION,
    "IfActionUsage": K.ACTION, "WhileLoopActionUsage": K.ACTION, "ForLoopActionUsage": K.ACTION,
    "DecisionNode": K.ACTION, "MergeNode": K.ACTION, "ForkNode": K.ACTION, "JoinNode": K.ACTION,
    "StateDefinition": K.STATE_DEF, "StateUsage": K.STATE, "ExhibitStateUsage": K.STATE,
    "TransitionUsage": K.TRANSITION,
    "RequirementDefinition": K.REQUIREMENT_DEF, "ConcernDefinition": K.REQUIREMENT_DEF,
    "ViewpointDefinition": K.REQUIREMENT_DEF,
    "RequirementUsage": K.REQUIREMENT, "ConcernUsage": K.REQUIREMENT, "ViewpointUsage": K.REQUIREMENT,
    "SatisfyRequirementUsage": K.SATISFY,
    "ConstraintDefinition": K.CONSTRAINT_DEF, "ConstraintUsage": K.CONSTRAINT, "AssertConstraintUsage": K.CONSTRAINT,
    "CalculationDefinition": K.CALCULATION_DEF, "CalculationUsage": K.CALCULATION,
    "UseCaseDefinition": K.CASE_DEF, "AnalysisCaseDefinition": K.CASE_DEF, "VerificationCaseDefinition": K.CASE_DEF,
    "UseCaseUsage": K.CASE, "IncludeUseCaseUsage": K.CASE, "AnalysisCaseUsage": K.CASE, "VerificationCaseUsage": K.CASE,
    "OccurrenceDefinition": K.OCCURRENCE_DEF, "IndividualDefinition": K.OCCURRENCE_DEF,
    "OccurrenceUsage": K.OCCURRENCE, "IndividualUsage": K.OCCURRENCE, "EventOccurrenceUsage": K.OCCURRENCE,
    "ReferenceUsage": K.REFERENCE,  # kept only when named (declared, or by what it redefines)
}
CONNECTOR_KINDS = frozenset({K.CONNECTION, K.INTERFACE, K.FLOW, K.ALLOCATION, K.SATISFY})


class Element(BaseModel):
    """One named (or structurally relevant anonymous) model element."""

    id: str  # the export's elementId: stable within one export, not across models
    kind: ElementKind
    metatype: str  # the OMG API @type, e.g. "ExhibitStateUsage"
    name: str | None = None
    qualified_name: str | None = None
    owner: str | None = None  # id of the nearest enclosing tree element
    types: list[str] = Field(default_factory=list)
    specializes: list[str] = Field(default_factory=list)
    redefines: list[str] = Field(default_factory=list)
    ends: list[str] = Field(default_factory=list)  # connector ends as written, e.g. "tank.fp"
    source: str | None = None  # transitions: source and target states (qualified names)
    target: str | None = None
    direction: str | None = None  # in / out / inout for parameters and directed features
    line: int | None = None
    end_line: int | None = None


class ElementTree(BaseModel):
    """The elements of one model in document order, with containment by ``owner`` ids."""

    elements: list[Element] = Field(default_factory=list)
    complete: bool = True  # False when the kernel could not export (syntax errors): the list is then empty
    check: CheckResult | None = None  # the validation of the same load

    def by_id(self) -> dict[str, Element]:
        return {e.id: e for e in self.elements}

    def of_kind(self, *kinds: ElementKind) -> list[Element]:
        return [e for e in self.elements if e.kind in kinds]

    def children(self, element: Element | None) -> list[Element]:
        """Direct children (``None``: the top-level elements)."""
        owner = element.id if element is not None else None
        return [e for e in self.elements if e.owner == owner]

    def find(self, qualified_name: str) -> Element | None:
        return next((e for e in self.elements if e.qualified_name == qualified_name), None)

    def path(self, element: Element) -> list[str]:
        """Names from the top down to ``element`` (anonymous elements as ``""``)."""
        index = self.by_id()
        names: list[str] = []
        current: Element | None = element
        while current is not None:
            names.append(current.name or "")
            current = index.get(current.owner) if current.owner else None
        return names[::-1]


def _ref(value: Any) -> str | None:
    return value.get("@id") if isinstance(value, dict) else None


def _refs(value: Any) -> list[str]:
    if isinstance(value, list):
        return [r for r in (_ref(v) for v in value) if r]
    ref = _ref(value)
    return [ref] if ref else []


_TTL_ID = re.compile(r'sysml:elementId "((?:[^"\\]|\\.)*)"')
_TTL_QNAME = re.compile(r'sysml:qualifiedName "((?:[^"\\]|\\.)*)"')


def _ttl_string(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


def library_stubs(turtle: str) -> dict[str, str | None]:
    """Library element id -> qualified name (``None`` for an unnamed one, e.g. a membership), from the stubs
    the Turtle export writes for the library elements a model references.

    A stub is one subject block (blank-line separated) with ``sysml:isLibraryElement "true"``; its subject
    is written ``<urn:sysmlv2:element:ID>`` or ``elmt:ID`` depending on the id, so the id is read from
    ``sysml:elementId`` instead.
    """
    stubs: dict[str, str | None] = {}
    for block in turtle.split("\n\n"):
        if 'sysml:isLibraryElement "true"' not in block:
            continue
        element_id, qname = _TTL_ID.search(block), _TTL_QNAME.search(block)
        if element_id:
            stubs[_ttl_string(element_id.group(1))] = _ttl_string(qname.group(1)) if qname else None
    return stubs


def library_names(turtle: str) -> dict[str, str]:
    """Library element id -> qualified name, for the named stubs of the Turtle export."""
    return {element_id: name for element_id, name in library_stubs(turtle).items() if name is not None}


def external_refs(elements: list[dict[str, Any]]) -> set[str]:
    """The ids an API JSON export references but does not contain (library elements)."""
    own = {e["@id"] for e in elements if isinstance(e, dict) and "@id" in e}
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            ref = value.get("@id")
            if isinstance(ref, str):
                found.add(ref)
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for element in elements:
        if isinstance(element, dict):
            for key, value in element.items():
                if key != "@id":
                    walk(value)
    return found - own


class LibraryNames:
    """The library stubs met so far in one kernel binary's exports (thread-safe).

    ``names_for(refs)`` is what ``library_names`` of the model's own Turtle export would give for those
    references (a stub's id is a name-based UUID: the same element, the same id, the same name), or ``None``
    when one of them was never met, and the Turtle export must be asked for.
    """

    def __init__(self) -> None:
        self._stubs: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def learn(self, turtle: str) -> None:
        stubs = library_stubs(turtle)
        with self._lock:
            self._stubs.update(stubs)

    def names_for(self, refs: set[str]) -> dict[str, str] | None:
        with self._lock:
            if not refs <= self._stubs.keys():
                return None
            return {ref: name for ref in refs if (name := self._stubs[ref]) is not None}


_LIBRARIES: dict[str, LibraryNames] = {}
_LIBRARIES_LOCK = threading.Lock()


def library_of(kernel: OpenSysMLKernel) -> LibraryNames:
    """The library stubs learnt from this kernel binary's exports."""
    with _LIBRARIES_LOCK:
        return _LIBRARIES.setdefault(str(kernel.binary), LibraryNames())


class _Export:
    """Index over the API JSON elements with name resolution for references."""

    def __init__(self, elements: list[dict[str, Any]], library: dict[str, str]) -> None:
        self.raw = {e["@id"]: e for e in elements if "@id" in e}
        self.library = library

    def name_of(self, ref: str | None) -> str | None:
        if ref is None:
            return None
        element = self.raw.get(ref)
        if element is None:
            return self.library.get(ref)
        if element.get("@type") == "ConjugatedPortDefinition":  # `~FuelPort` is typed by FuelPort's conjugate
            conjugated = self.name_of(_ref(element.get("owner")))
            return f"~{conjugated}" if conjugated else None
        if element.get("qualifiedName"):
            return element["qualifiedName"]
        return self.path_of(ref)

    def path_of(self, ref: str | None) -> str | None:
        """A referenced feature as written: a chain ``a.b.c``, else the feature's own name."""
        if ref is None:
            return None
        element = self.raw.get(ref)
        if element is None:
            qualified = self.library.get(ref)
            return qualified.rsplit("::", 1)[-1] if qualified else None
        chain = _refs(element.get("chainingFeature"))
        if chain:
            parts = [self.path_of(c) for c in chain]
            return ".".join(p or "?" for p in parts)
        return element.get("declaredName") or element.get("name")

    def related(self, element: dict[str, Any], relationships: str, target: str) -> list[str]:
        names = []
        for rel in _refs(element.get(relationships)):
            name = self.name_of(_ref(self.raw.get(rel, {}).get(target)))
            if name:
                names.append(name)
        return names

    def end_path(self, end_ref: str) -> str | None:
        end = self.raw.get(end_ref, {})
        subsetting = self.raw.get(_ref(end.get("ownedReferenceSubsetting")) or "", {})
        path = self.path_of(_ref(subsetting.get("referencedFeature")))
        # a flow end `tank.fp.fuel` names the flowing feature in a nested feature redefining `fuel`
        for nested in _refs(end.get("ownedFeature")):
            redefined = self.related(self.raw.get(nested, {}), "ownedRedefinition", "redefinedFeature")
            if redefined and path:
                path = f"{path}.{redefined[0].rsplit('::', 1)[-1]}"
        return path


def _tree_elements(export: _Export) -> Iterator[Element]:
    raw = export.raw
    candidates = {ref: kind for ref, e in raw.items() if (kind := KIND_OF_METATYPE.get(e.get("@type", ""))) is not None}

    def placement(ref: str) -> tuple[str | None, bool]:
        """Nearest enclosing candidate, and whether any enclosing candidate is a transition or connector
        (whose owned features — ends, triggers, successions — are implied structure, not model elements)."""
        owner: str | None = None
        current = _ref(raw[ref].get("owner"))
        for _ in range(10_000):  # bounded: a malformed export must not loop
            if current is None:
                break
            kind = candidates.get(current)
            if kind is not None:
                if kind == K.TRANSITION or kind in CONNECTOR_KINDS:
                    return None, True
                owner = owner or current
            current = _ref(raw.get(current, {}).get("owner"))
        return owner, False

    for ref, kind in candidates.items():
        element = raw[ref]
        owner, implied = placement(ref)
        if implied:
            continue
        if kind == K.ENUM_VALUE and (owner is None or candidates.get(owner) != K.ENUMERATION_DEF):
            kind = K.ATTRIBUTE  # `enum x : Color` outside an enumeration body is an attribute of enum type
        types = export.related(element, "ownedTyping", "type")
        subsets = [n for n in export.related(element, "ownedSubsetting", "subsettedFeature")]
        redefines = export.related(element, "ownedRedefinition", "redefinedFeature")
        specializes = export.related(element, "ownedSubclassification", "superclassifier")
        specializes += [s for s in subsets if s not in redefines]
        # a redefining usage without a name of its own takes the redefined feature's (SysML's effective name)
        name = element.get("declaredName") or element.get("name") or (
            redefines[0].rsplit("::", 1)[-1] if redefines else None)
        if kind == K.REFERENCE and not name:
            continue  # anonymous reference features (succession ends, implied parameters) are structure
        ends = [p for p in (export.end_path(e) for e in _refs(element.get("connectorEnd"))) if p]
        if kind == K.SATISFY:
            satisfied = export.name_of(_ref(element.get("subsets")))
            subject = element.get("subject")
            ends = [x for x in (satisfied, subject if isinstance(subject, str) else None) if x]
            specializes = []
        yield Element(
            id=ref,
            kind=kind,
            metatype=element["@type"],
            name=name,
            qualified_name=element.get("qualifiedName"),
            owner=owner,
            types=types,
            specializes=specializes,
            redefines=redefines,
            ends=ends,
            source=export.name_of(_ref(element.get("source"))) if kind == K.TRANSITION else None,
            target=export.name_of(_ref(element.get("target"))) if kind == K.TRANSITION else None,
            direction=element.get("direction"),
            line=element.get("sysx:sourceLine"),
            end_line=element.get("sysx:sourceEndLine"),
        )


def parse_api_json(api_json: str | list[dict[str, Any]], turtle: str = "",
                   library: dict[str, str] | None = None) -> list[Element]:
    """Tree elements from an OMG API JSON export, with library type names from the Turtle export (or
    ``library``, id -> qualified name, when given)."""
    elements = json.loads(api_json) if isinstance(api_json, str) else api_json
    if not isinstance(elements, list):
        raise ToolCrashError("the OpenSysML JSON export is not a list of elements")
    return list(_tree_elements(_Export(elements, library if library is not None else library_names(turtle))))


def element_tree(model: str | Artifact | dict[str, str], *, timeout_s: float | None = None,
                 kernel: OpenSysMLKernel | None = None) -> ElementTree:
    """Load a model in a fresh folder, validate it, and export its element tree in the same load.

    A model with syntax errors cannot be exported: the tree is then empty and ``complete`` is False;
    ``check`` always holds the validation result.
    """
    kernel = kernel or shared_kernel()
    library = library_of(kernel)
    parsed: dict[str, Any] = {}

    def turtle_unless_known(run: KernelRun, diagnostics: list[Diagnostic]) -> tuple[str, ...]:
        # a model with errors may reference a library element its Turtle export has no stub for (``Real``
        # without its import): the names then come from its own export, as they always did
        if any(d.severity in (Severity.ERROR, Severity.TYPING) for d in diagnostics):
            return (TURTLE_EXPORT,)
        try:
            elements = json.loads(run.exports[JSON_EXPORT])
        except (KeyError, ValueError):
            return (TURTLE_EXPORT,)
        parsed["elements"] = elements
        if isinstance(elements, list):
            parsed["library"] = library.names_for(external_refs(elements))
        return (TURTLE_EXPORT,) if parsed.get("library") is None else ()

    check, run = run_files(model_files(model), exports=(JSON_EXPORT,), more_exports=turtle_unless_known,
                           timeout_s=timeout_s, kernel=kernel)
    if run is None or JSON_EXPORT not in run.exports:
        refused = next((r.error for r in (run.export_replies if run else []) if r.error), None)
        log.info("opensysml.export_refused", outcome=check.outcome.value, reason=refused)
        return ElementTree(complete=False, check=check)
    if TURTLE_EXPORT in run.exports:
        library.learn(run.exports[TURTLE_EXPORT])
        return ElementTree(elements=parse_api_json(parsed.get("elements", run.exports[JSON_EXPORT]),
                                                   run.exports[TURTLE_EXPORT]), check=check)
    return ElementTree(elements=parse_api_json(parsed.get("elements", run.exports[JSON_EXPORT]), library=parsed.get("library")),
                       check=check)
