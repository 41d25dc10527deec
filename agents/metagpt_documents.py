"""The typed documents metagpt's roles hand each other, parsed from the roles' JSON replies.

MetaGPT's standard operating procedure passes structured documents between roles, not free text: the
Requirements Analyst writes a :class:`RequirementsAnalysis`, the Architect a :class:`SystemDesign`, the Reviewer
:class:`ReviewComments`. A reply is parsed with :func:`parse_document`; a malformed one raises
:class:`DocumentError` with one line saying what is wrong, which the role is shown once to retry.

>>> parse_document(RequirementsAnalysis, '{"requirements": [{"id": "R1", "text": "a counter", "priority": "MUST"}]}')
RequirementsAnalysis(requirements=[Requirement(id='R1', text='a counter', priority='MUST')])
"""

from __future__ import annotations

import json
import re
from typing import Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from sysmo.errors import SysmoError


class Requirement(BaseModel):
    id: str = Field(description="a short id, R1, R2, ...")
    text: str = Field(description="one element, relation, behaviour or constraint the model must have")
    priority: Literal["MUST", "SHOULD"] = "MUST"


class RequirementsAnalysis(BaseModel):
    """The Requirements Analyst's document: what the model must contain."""

    requirements: list[Requirement] = Field(min_length=1)

    def render(self) -> str:
        return "\n".join(f"{r.id} [{r.priority}] {r.text}" for r in self.requirements)


class DesignElement(BaseModel):
    name: str = Field(description="the name the Modeler must use")
    kind: str = Field(description="part, class, component, variable, action, ...")
    contains: list[str] = Field(default_factory=list)
    relations: list[str] = Field(default_factory=list)
    satisfies: list[str] = Field(default_factory=list, description="ids of the requirements it covers")


class SystemDesign(BaseModel):
    """The Architect's document: the structure the Modeler writes."""

    elements: list[DesignElement] = Field(min_length=1)
    notes: str = ""

    def render(self) -> str:
        lines = []
        for e in self.elements:
            line = f"- {e.name} ({e.kind})"
            if e.contains:
                line += "; contains " + ", ".join(e.contains)
            if e.relations:
                line += "; relations " + ", ".join(e.relations)
            if e.satisfies:
                line += "; satisfies " + ", ".join(e.satisfies)
            lines.append(line)
        if self.notes.strip():
            lines.append("Notes: " + self.notes.strip())
        return "\n".join(lines)


class ReviewComment(BaseModel):
    problem: str
    fix: str
    line: int | None = None


class ReviewComments(BaseModel):
    """The Reviewer's document: one comment per problem the tool reported."""

    comments: list[ReviewComment] = Field(min_length=1)

    def render(self) -> str:
        return "\n".join(
            f"{i}. {'line ' + str(c.line) + ': ' if c.line is not None else ''}{c.problem} Fix: {c.fix}"
            for i, c in enumerate(self.comments, 1)
        )


Document = TypeVar("Document", RequirementsAnalysis, SystemDesign, ReviewComments)

DOCUMENT_FOR_ROLE: dict[str, type[BaseModel]] = {
    "analyst": RequirementsAnalysis,
    "architect": SystemDesign,
    "reviewer": ReviewComments,
}

_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


class DocumentError(SysmoError):
    """A role's reply is not the JSON document it was asked for."""


def _json_text(text: str) -> str:
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start:
        raise DocumentError("the reply holds no JSON object")
    return text[start : end + 1]


def parse_document(kind: type[Document], text: str) -> Document:
    """The ``kind`` document in a reply (bare JSON, a ```json block, or an object inside prose)."""
    if not text.strip():
        raise DocumentError("the reply is empty")
    raw = _json_text(text)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"the reply's JSON does not parse: {exc.msg} at line {exc.lineno}") from None
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise DocumentError(
            f"the {kind.__name__} document is invalid at {where}: {first['msg']} ({exc.error_count()} errors)"
        ) from None


def schema_text(kind: type[BaseModel]) -> str:
    """The JSON schema a role must follow, for its prompt."""
    return json.dumps(kind.model_json_schema(), indent=1)
