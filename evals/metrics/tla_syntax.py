r"""TLA+ syntax score: 0.5 x whole-module SANY (S_full) + 0.5 x n_c / n_t, the share of actions passing alone.

The paper: "a per-action partial score is introduced — encapsulating each action along with necessary
dependencies (constant declarations, variable definitions) into small independent models for SANY checks;
n_c/n_t is the ratio of passing actions". An action here is a top-level definition whose body is an action
formula: it primes a variable or says ``UNCHANGED`` (``Acquire(t) == ... /\ lock' = TRUE``). ``Init``,
invariants, helpers, ``Spec`` and a ``Next`` that only names other actions are not actions; a ``Next``
written out with primes is. SysMoBench's harness code cuts the module at every column-1 definition and calls
each piece an "action"; the paper's words (and the task definitions' "core actions") mean the steps of the
system, so we count those. A module without any action formula (e.g. one broken before its actions) falls
back to all definitions, and ``partial_over`` says which was used. Every definition is still checked alone,
so the stage detail lists failing helpers too.

A definition "alone" is a small module holding the spec's EXTENDS, its CONSTANT/VARIABLE declarations,
its top-level INSTANCEs, the definitions the definition references (transitively, with the RECURSIVE
declarations they need) and the definition itself, in the order the spec wrote them.

How top-level units are found (comments and strings blanked first, so they never split anything): a unit
starts at a line that begins in column 1 with a definition head (``Name ==``, ``Name(p, q) ==``,
``f[x \\in S] ==``, ``a \\prec b ==``, optionally ``LOCAL``) or a module-level keyword (``VARIABLE(S)``,
``CONSTANT(S)``, ``EXTENDS``, ``INSTANCE``, ``ASSUME``, ``THEOREM``, ``RECURSIVE`` ...); it runs to the next
unit. Every corpus spec writes top-level definitions in column 1; definitions inside ``LET`` are indented.

When the whole module passes SANY, every definition passes alone too (SANY checks a definition only
against the declarations and definitions it names), so the per-definition checks are skipped unless
``check_definitions="always"``. Modules are checked in batches: one SANY JVM checks many files, and a
fatal parse error (which stops SANY) only sends the files after it to the next batch.

>>> s = score(artifact)
>>> s.value, s.s_full, s.actions_passed, s.actions_total   # one of four actions is broken
(0.375, 0.0, 3, 4)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.log import get_logger
from sysmo.sandbox import Limits
from sysmo.contracts.check import CheckResult, Outcome, Severity
from sysmo.tools.tla import sany
from sysmo.tools.tla.jvm import SANY_JVM_FLAGS, run_java
from sysmo.tools.tla.source import MODULE_HEADER, prepare
from sysmo.tools.tla.source_map import LineMap

log = get_logger(__name__)

DEFAULT_TIMEOUT_S = 60.0
WRAPPER_PREFIX = "SysmoDef"
BATCH_CHARS = 1_500_000  # keep one SANY run's input bounded on huge specs (the PGo raftkvs spec is 2.3 MB)

IDENT = r"[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*"
KEYWORD_UNIT = re.compile(
    r"^(?:LOCAL\s+)?(?P<kw>VARIABLES?|CONSTANTS?|EXTENDS|INSTANCE|ASSUME|ASSUMPTION|AXIOM|THEOREM|LEMMA|"
    r"PROPOSITION|COROLLARY|RECURSIVE|USE|HIDE)\b"
)
DEFINITION_HEAD = re.compile(
    rf"^(?:LOCAL\s+)?(?:"
    rf"(?P<op>{IDENT})\s*(?:\((?P<params>[^()]*(?:\([^()]*\)[^()]*)*)\))?\s*=="  # Op == / Op(a, F(_)) ==
    rf"|(?P<fn>{IDENT})\s*\[[^\]]*\]\s*=="  # f[x \in S] ==
    rf"|{IDENT}\s+(?P<infix>[^\sA-Za-z0-9_()]+|\\[a-z]+)\s+{IDENT}\s*=="  # a \prec b ==
    rf"|(?P<prefix>-\.|~|\[\]|<>)\s*{IDENT}\s*=="  # -. a ==
    rf"|{IDENT}\s*(?P<postfix>\^\+|\^\*|\^#)\s*=="  # a^+ ==
    rf")"
)
SEPARATOR = re.compile(r"^\s*-{4,}\s*$")
END = re.compile(r"^\s*={4,}")
TOKEN = re.compile(rf"{IDENT}|\\[a-z]+|[^\sA-Za-z0-9_]+")
NOT_DEFINITION_HEADS = {"LET", "IN", "IF", "THEN", "ELSE", "CASE", "OTHER", "CHOOSE", "LAMBDA"}


class Unit(BaseModel):
    """One top-level piece of a module: a definition, a declaration, or another module-level statement."""

    kind: Literal["definition", "variables", "constants", "extends", "instance", "recursive", "other"]
    name: str | None = None  # the defined name (definitions) or None
    declares: list[str] = Field(default_factory=list)  # names a RECURSIVE unit declares
    text: str  # the unit's source (comments blanked)
    line: int  # 1-based line where the unit starts
    uses: list[str] = Field(default_factory=list)  # identifiers and operator symbols the unit mentions


class ModuleUnits(BaseModel):
    module: str
    units: list[Unit]

    @property
    def definitions(self) -> list[Unit]:
        return [u for u in self.units if u.kind == "definition"]

    def definition(self, name: str) -> Unit | None:
        return next((u for u in self.units if u.kind == "definition" and u.name == name), None)


class DefinitionVerdict(BaseModel):
    name: str
    line: int
    outcome: Outcome
    message: str = ""  # the first SANY error, when the definition fails alone
    action: bool = False  # an action formula (primes a variable or says UNCHANGED): counted in n_c / n_t

    @property
    def passed(self) -> bool:
        return self.outcome == Outcome.OK


class SyntaxScore(BaseModel):
    """S_full, the per-definition verdicts and the combined value (0.5 x S_full + 0.5 x n_c / n_t)."""

    full: CheckResult
    definitions: list[DefinitionVerdict] = Field(default_factory=list)
    definitions_checked: bool = False  # False: inferred from a passing whole module (see the module doc)
    sany_version: str = ""

    @property
    def s_full(self) -> float:
        return 1.0 if self.full.outcome == Outcome.OK else 0.0

    @property
    def definitions_total(self) -> int:
        return len(self.definitions)

    @property
    def definitions_passed(self) -> int:
        return sum(d.passed for d in self.definitions)

    @property
    def actions(self) -> list[DefinitionVerdict]:
        return [d for d in self.definitions if d.action]

    @property
    def partial_over(self) -> Literal["actions", "definitions"]:
        return "actions" if self.actions else "definitions"

    @property
    def counted(self) -> list[DefinitionVerdict]:
        """The units of n_c / n_t: the actions, or every definition when the module has no action formula."""
        return self.actions or self.definitions

    @property
    def actions_total(self) -> int:
        return len(self.counted)

    @property
    def actions_passed(self) -> int:
        return sum(d.passed for d in self.counted)

    @property
    def share(self) -> float:
        """n_c / n_t over actions (see the module doc)."""
        return self.actions_passed / self.actions_total if self.counted else 0.0

    @property
    def definitions_share(self) -> float:
        return self.definitions_passed / self.definitions_total if self.definitions else 0.0

    @property
    def value(self) -> float:
        return 0.5 * self.s_full + 0.5 * self.share

    @property
    def outcome(self) -> Outcome:
        """The whole module's SANY outcome; inconclusive also when any definition check timed out."""
        if self.full.outcome != Outcome.OK:
            return self.full.outcome
        if any(d.outcome == Outcome.INCONCLUSIVE for d in self.definitions):
            return Outcome.INCONCLUSIVE
        return Outcome.OK


# ------------------------------------------------------------------------------------------ splitting

PRIMED = re.compile(r"[A-Za-z0-9_)\]}>]\s*'|\bUNCHANGED\b")


def is_action(unit: Unit) -> bool:
    """A definition whose body is an action formula: it primes something or says ``UNCHANGED``."""
    if unit.kind != "definition":
        return False
    body = blank_comments(unit.text, strings=True).split("==", 1)[-1]
    return PRIMED.search(body) is not None



def blank_comments(text: str, *, strings: bool = False) -> str:
    """Replace comments (and, if ``strings``, string literals' contents) by spaces; line breaks stay put."""
    out: list[str] = []
    i, n, depth = 0, len(text), 0
    while i < n:
        two = text[i : i + 2]
        if depth:
            if two == "(*":
                depth, i = depth + 1, i + 2
                out.append("  ")
            elif two == "*)":
                depth, i = depth - 1, i + 2
                out.append("  ")
            else:
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
        elif two == "(*":
            depth, i = 1, i + 2
            out.append("  ")
        elif two == "\\*":
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1)
            out.append(
                '"'
                + (" " * (j - i - 1) if strings else text[i + 1 : j])
                + ('"' if text[j] == '"' else text[j])
            )
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def bracket_depths(text: str) -> list[int]:
    """The bracket depth ((), [], {}, <<>>) at each character of ``text``, string literals skipped (a TLA+
    operator at depth 0 stands outside every bracket)."""
    depth, out, i, in_string = 0, [], 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(depth)
            if ch == "\\":
                out.append(depth)
                i += 2
                continue
            in_string = ch != '"'
        elif ch == '"':
            in_string = True
            out.append(depth)
        elif text.startswith("<<", i):
            out.extend([depth, depth + 1])
            depth += 1
            i += 2
            continue
        elif text.startswith(">>", i) and depth > 0:
            depth -= 1
            out.extend([depth, depth])
            i += 2
            continue
        elif ch in "([{":
            out.append(depth)
            depth += 1
        elif ch in ")]}" and depth > 0:
            depth -= 1
            out.append(depth)
        else:
            out.append(depth)
        i += 1
    return out[: len(text)]


def _head(line: str) -> tuple[str, str | None] | None:
    """(kind, name) when ``line`` starts a top-level unit, else None."""
    if not line or line[0].isspace():
        return None
    keyword = KEYWORD_UNIT.match(line)
    if keyword:
        kw = keyword.group("kw")
        kind = {
            "VARIABLE": "variables",
            "VARIABLES": "variables",
            "CONSTANT": "constants",
            "CONSTANTS": "constants",
            "EXTENDS": "extends",
            "INSTANCE": "instance",
            "RECURSIVE": "recursive",
        }.get(kw, "other")
        return kind, None
    definition = DEFINITION_HEAD.match(line)
    if definition:
        name = next(
            g
            for g in (
                definition.group("op"),
                definition.group("fn"),
                definition.group("infix"),
                definition.group("prefix"),
                definition.group("postfix"),
            )
            if g
        )
        if name in NOT_DEFINITION_HEADS:
            return None
        return "definition", name
    return None


def split_module(text: str) -> ModuleUnits:
    """The main module's top-level units, in order (text after the closing ``====`` is ignored)."""
    clean = blank_comments(text)
    lines = clean.split("\n")
    header = MODULE_HEADER.search(clean)
    module = header.group(1) if header else "Spec"
    start = clean.count("\n", 0, header.end()) + 1 if header else 0
    units: list[Unit] = []
    current: tuple[Any, str | None, int, list[str]] | None = None

    def close() -> None:
        if current is None:
            return
        kind, name, line, body = current
        text_ = "\n".join(body).rstrip()
        searchable = blank_comments(text_, strings=True)
        tokens = TOKEN.findall(searchable.split("==", 1)[1] if kind == "definition" else searchable)
        # WF_vars(A), SF_vars(A) and [A]_vars read as one word here but name ``vars``
        tokens += [t[3:] for t in tokens if t[:3] in ("WF_", "SF_")] + [
            t.lstrip("_") for t in tokens if t[:1] == "_"
        ]
        uses = list(dict.fromkeys(tokens))
        declares = []
        if kind == "recursive":
            declares = [
                re.sub(r"\(.*", "", p).strip()
                for p in re.sub(r"^\s*RECURSIVE\b", "", searchable).split(",")
                if p.strip()
            ]
            declares = [d for d in declares if re.fullmatch(IDENT, d)]
        units.append(Unit(kind=kind, name=name, text=text_, line=line, uses=uses, declares=declares))

    for number in range(start, len(lines)):
        line = lines[number]
        if END.match(line):
            break
        if SEPARATOR.match(line):
            close()
            current = None
            continue
        head = _head(line)
        if head is not None:
            close()
            current = (head[0], head[1], number + 1, [line])
        elif current is not None:
            current[3].append(line)
    close()
    return ModuleUnits(module=module, units=units)


def needed_units(units: ModuleUnits, target: Unit) -> list[Unit]:
    """The units a module checking ``target`` alone holds, in the spec's order."""
    by_name = {u.name: u for u in units.units if u.kind == "definition" and u.name}
    recursive = [u for u in units.units if u.kind == "recursive"]
    wanted: set[str] = set()
    pending = [target]
    chosen_recursive: list[Unit] = []
    while pending:
        unit = pending.pop()
        if unit.name is not None:
            if unit.name in wanted:
                continue
            wanted.add(unit.name)
        names = [n for n in unit.uses if n in by_name and n not in wanted]
        for (
            rec
        ) in recursive:  # a RECURSIVE operator needs its declaration, and the declaration all its operators
            if unit.name in rec.declares and rec not in chosen_recursive:
                chosen_recursive.append(rec)
                names += [n for n in rec.declares if n in by_name and n not in wanted]
        pending += [by_name[n] for n in names]
    keep = {"extends", "variables", "constants", "instance"}
    return [
        u
        for u in units.units
        if u.kind in keep or u in chosen_recursive or (u.kind == "definition" and u.name in wanted)
    ]


def definition_module(units: ModuleUnits, target: Unit, module: str) -> str:
    body = "\n".join(u.text for u in needed_units(units, target))
    return f"---- MODULE {module} ----\n{body}\n====\n"


def _source_lines(units: ModuleUnits, target: Unit) -> list[int]:
    """For each line of ``definition_module``'s text: the spec line it came from (0 for the header)."""
    lines = [0]
    for unit in needed_units(units, target):
        lines += range(unit.line, unit.line + unit.text.count("\n") + 1)
    return lines


# ------------------------------------------------------------------------------------------- checking


class _Verdict(BaseModel):
    outcome: Outcome
    message: str = ""


def _sections(output: str) -> dict[str, str]:
    """SANY's output for several files, split per file it was asked to parse (by its banner)."""
    sections: dict[str, str] = {}
    for chunk in re.split(r"\*{6} SANY2? Version", output)[1:]:
        parsed = re.search(r"Parsing file (?:.*/)?(\w+)\.tla", chunk)
        if parsed:
            sections[parsed.group(1)] = chunk
    return sections


def _judge(section: str, module: str) -> _Verdict | None:
    diagnostics = sany.parse_output(section, module)
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    if errors:
        return _Verdict(outcome=Outcome.FAILED, message=errors[0].render())
    if f"Semantic processing of module {module}" in section:
        return _Verdict(outcome=Outcome.OK)
    return None  # SANY stopped before finishing this file


def check_modules(
    modules: dict[str, str], extra_files: dict[str, str], timeout_s: float
) -> tuple[dict[str, _Verdict], str]:
    """SANY on many small modules, in as few JVM runs as fatal errors allow; verdicts and SANY's version."""
    verdicts: dict[str, _Verdict] = {}
    order = list(modules)
    version = ""
    while order:
        batch, size = [], 0
        for name in order:
            if batch and size + len(modules[name]) > BATCH_CHARS:
                break
            batch.append(name)
            size += len(modules[name])
        files = {**extra_files, **{f"{name}.tla": modules[name] for name in batch}}
        run = run_java(
            "tla2sany.SANY",
            [f"{name}.tla" for name in batch],
            files=files,
            limits=Limits(timeout_s=timeout_s, memory_mb=sany.SANY_HEAP_MB + 1024),
            jvm_flags=SANY_JVM_FLAGS,
            heap_mb=sany.SANY_HEAP_MB,
        )
        version = version or sany.detect_version(run.output)
        sections = _sections(run.output)
        decided = 0
        for name in batch:
            verdict = _judge(sections[name], name) if name in sections else None
            if verdict is None and name in sections and not run.timed_out:
                # SANY aborted on this very file (a fatal parse error that named no line)
                verdict = _Verdict(outcome=Outcome.FAILED, message=" ".join(sections[name].split()[-30:]))
            if verdict is None:
                break
            verdicts[name] = verdict
            decided += 1
        if run.timed_out:
            for name in batch[decided:]:
                verdicts[name] = _Verdict(
                    outcome=Outcome.INCONCLUSIVE, message=f"SANY did not finish within {timeout_s:.0f} s"
                )
            decided = len(batch)
        if decided == 0:  # nothing learned: never loop on the same batch
            verdicts[batch[0]] = _Verdict(outcome=Outcome.ERROR, message=" ".join(run.output.split()[-40:]))
            decided = 1
        order = order[decided:]
    return verdicts, version


def score(
    artifact: Artifact,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    check_definitions: Literal["auto", "always"] = "auto",
) -> SyntaxScore:
    """S_full with ``sany.check`` and the per-definition share (the module doc says when it is inferred)."""
    full = sany.check(artifact, limits=Limits(timeout_s=timeout_s, memory_mb=sany.SANY_HEAP_MB + 1024))
    spec = prepare(artifact)
    units = split_module(spec.files[spec.main_file])
    definitions = units.definitions
    result = SyntaxScore(full=full, sany_version=full.tool_version)
    if full.outcome == Outcome.OK and check_definitions == "auto":
        result.definitions = [
            DefinitionVerdict(name=d.name or "?", line=d.line, outcome=Outcome.OK, action=is_action(d))
            for d in definitions
        ]
        return result
    if full.outcome == Outcome.INCONCLUSIVE:  # SANY timed out on the whole: the parts would too
        result.definitions = [
            DefinitionVerdict(
                name=d.name or "?",
                line=d.line,
                outcome=Outcome.INCONCLUSIVE,
                message="not checked: SANY timed out on the whole module",
                action=is_action(d),
            )
            for d in definitions
        ]
        return result
    taken = {name.removesuffix(".tla") for name in spec.files}
    names = _wrapper_names(len(definitions), taken)
    modules = {name: definition_module(units, d, name) for name, d in zip(names, definitions, strict=True)}
    others = {n: t for n, t in spec.files.items() if n.endswith(".tla") and n != spec.main_file}
    verdicts, version = check_modules(modules, others, timeout_s)
    result.definitions_checked = True
    result.sany_version = full.tool_version if "unknown" not in full.tool_version else version
    result.definitions = [
        DefinitionVerdict(
            name=d.name or "?",
            line=d.line,
            outcome=verdicts[n].outcome,
            message=LineMap(generated=n, source_file=spec.main_file, lines=_source_lines(units, d),
                            text=modules[n].splitlines()).rewrite(verdicts[n].message),
            action=is_action(d),
        )
        for n, d in zip(names, definitions, strict=True)
    ]
    log.info(
        "tla_syntax.scored",
        module=units.module,
        s_full=result.s_full,
        passed=result.definitions_passed,
        total=result.definitions_total,
        actions_passed=result.actions_passed,
        actions=result.actions_total,
    )
    return result


def _wrapper_names(count: int, taken: Iterable[str]) -> list[str]:
    taken = set(taken)
    prefix = WRAPPER_PREFIX
    while any(t.startswith(prefix) for t in taken):
        prefix += "X"
    return [f"{prefix}{i}" for i in range(1, count + 1)]
