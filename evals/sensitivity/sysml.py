"""SysML v2 (textual) mutation operators: pure text -> text, ``MutationError`` when one does not apply.

Mutants: ``drop_part`` (a one-line part usage), ``retype_port`` (a port usage typed by another port definition of
the model), ``change_multiplicity``, ``rename_element`` (to another name). Preserving: ``rename_element`` to a name
equal after normalisation (``FuelTank`` -> ``fuel_tank``), ``reorder_members`` (a package's members in reverse
order: SysML v2 resolves names regardless of the order of declarations).
"""

from __future__ import annotations

import re

from sysmo.evals.sensitivity import MutationError

_PART_USAGE = re.compile(r"^\s*(?:ref\s+)?part\s+(?!def\b)([\w]+)\s*(?::\s*[\w:~]+)?\s*(?:\[[^\]]*\])?\s*;\s*(//.*)?$")
_PORT_USAGE = re.compile(r"^(\s*(?:in\s+|out\s+|inout\s+)?port\s+(?!def\b)\w+\s*:\s*)(~?)([\w:]+)(.*)$")
_PORT_DEF = re.compile(r"^\s*port\s+def\s+(\w+)")
_MULTIPLICITY = re.compile(r"^(\s*(?:ref\s+)?(?:part|attribute|port|item|ref|occurrence|action)\s+(?!def\b)\w+\s*"
                           r"(?::\s*~?[\w:]+\s*)?)\[\s*(\d+|\*)\s*(?:\.\.\s*(\d+|\*)\s*)?\]")
_STRING_OR_COMMENT = r'("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|//[^\n]*|/\*.*?\*/)'


def _lines(text: str) -> list[str]:
    return text.split("\n")


def part_usages(text: str) -> list[str]:
    """Names of the part usages written on one line (``part engine : Engine;``)."""
    return [m.group(1) for line in _lines(text) if (m := _PART_USAGE.match(line))]


def port_usages(text: str) -> list[str]:
    return [re.search(r"port\s+(\w+)", m.group(1)).group(1) for line in _lines(text)  # type: ignore[union-attr]
            if (m := _PORT_USAGE.match(line))]


def port_definitions(text: str) -> list[str]:
    return [m.group(1) for line in _lines(text) if (m := _PORT_DEF.match(line))]


def uses(text: str, name: str) -> int:
    """How often ``name`` occurs as a whole word outside strings and comments."""
    code = re.sub(_STRING_OR_COMMENT, " ", text, flags=re.S)
    return len(re.findall(rf"(?<![\w']){re.escape(name)}(?![\w'])", code))


def drop_part(text: str, name: str) -> str:
    """The model without the one-line part usage ``name``."""
    lines = _lines(text)
    hits = [i for i, line in enumerate(lines) if (m := _PART_USAGE.match(line)) and m.group(1) == name]
    if not hits:
        raise MutationError(f"no one-line part usage named {name!r} (e.g. 'part {name} : T;')")
    return "\n".join(line for i, line in enumerate(lines) if i != hits[0])


def retype_port(text: str, name: str, new_type: str | None = None) -> str:
    """Port usage ``name`` typed by ``new_type`` (default: the first other port definition of the model); a
    conjugation ``~`` is kept."""
    lines = _lines(text)
    for i, line in enumerate(lines):
        match = _PORT_USAGE.match(line)
        if match is None or not re.search(rf"port\s+{re.escape(name)}\b", match.group(1)):
            continue
        current = match.group(3)
        others = [d for d in port_definitions(text) if d != current]
        chosen = new_type or (others[0] if others else None)
        if chosen is None or chosen == current:
            raise MutationError(f"the model has no other port definition to type {name!r} with")
        lines[i] = match.group(1) + match.group(2) + chosen + match.group(4)
        return "\n".join(lines)
    raise MutationError(f"no typed port usage named {name!r} (e.g. 'port {name} : P;')")


def change_multiplicity(text: str, index: int = 0) -> str:
    """Multiplicity number ``index`` (of a usage, in file order) changed: ``[n]`` -> ``[n+1]``, ``[a..b]`` ->
    ``[b+1]``, a multiplicity with ``*`` -> ``[1]`` (``[1]`` itself -> ``[2]``)."""
    lines = _lines(text)
    found = [i for i, line in enumerate(lines) if _MULTIPLICITY.match(line)]
    if index >= len(found):
        raise MutationError(f"the model has {len(found)} usages with a multiplicity, no number {index}")
    i = found[index]
    match = _MULTIPLICITY.match(lines[i])
    assert match is not None
    low, high = match.group(2), match.group(3)
    if "*" in (low, high):
        new = "1" if (low, high) != ("1", None) else "2"
    else:
        new = str(int(high or low) + 1)
    lines[i] = match.group(1) + f"[{new}]" + lines[i][match.end() :]
    return "\n".join(lines)


def rename_element(text: str, old: str, new: str) -> str:
    """``old`` is ``new`` everywhere it is a whole word outside strings and comments (declaration and uses)."""
    if not uses(text, old):
        raise MutationError(f"the model does not use the name {old!r}")
    if uses(text, new):
        raise MutationError(f"{new!r} is already a name in the model: choose another")
    parts = re.split(_STRING_OR_COMMENT, text, flags=re.S)
    for n in range(0, len(parts), 2):  # even parts are code, odd ones strings/comments
        parts[n] = re.sub(rf"(?<![\w']){re.escape(old)}(?![\w'])", new, parts[n])
    return "".join(p for p in parts if p is not None)


def snake_case(name: str) -> str:
    """``FuelTank`` -> ``fuel_tank``: another spelling of the same normalised name."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _members(body: str) -> list[str]:
    """The top-level statements of a package body, each with the comment lines above it."""
    members, start, depth, i = [], 0, 0, 0
    code = re.sub(_STRING_OR_COMMENT, lambda m: re.sub(r"[{};]", " ", m.group(0)), body, flags=re.S)
    while i < len(code):
        ch = code[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                members.append(body[start : i + 1])
                start = i + 1
        elif ch == ";" and depth == 0:
            members.append(body[start : i + 1])
            start = i + 1
        i += 1
    tail = body[start:]
    if tail.strip():
        members.append(tail)
    return members


def reorder_members(text: str) -> str:
    """The members of the outermost package in reverse order, imports first (SysML v2 resolves a name wherever
    in the namespace it is declared)."""
    match = re.search(r"\bpackage\s+[\w']+\s*\{", text)
    if match is None:
        raise MutationError("no 'package Name {' around the model")
    open_at = match.end()
    depth, close_at = 1, None
    code = re.sub(_STRING_OR_COMMENT, lambda m: re.sub(r"[{}]", " ", m.group(0)), text, flags=re.S)
    for i in range(open_at, len(code)):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            close_at = i
            break
    if close_at is None:
        raise MutationError("the package's braces do not balance")
    members = [m for m in _members(text[open_at:close_at]) if m.strip()]
    imports = [m for m in members if re.match(r"\s*(?:private\s+|public\s+)?import\b", m)]
    others = [m for m in members if m not in imports]
    if len(others) < 2:
        raise MutationError("fewer than two package members: nothing to reorder")
    body = "".join(imports) + "\n" + "".join(("\n" + m.strip("\n")) for m in reversed(others)) + "\n"
    return text[:open_at] + body + text[close_at:]
