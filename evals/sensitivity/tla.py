"""TLA+ mutation operators: pure text -> text functions of a module's source, each raising ``MutationError`` when it
does not apply.

Mutants (a scorer must notice them): ``drop_action_from_next``, ``noop_action``, ``weaken_guard``,
``rename_variable``, ``swap_init_values``, ``trivial_unrelated_spec``. Semantics-preserving variants (a scorer must
not notice them): ``reorder_definitions``, ``rename_definition``.

The operators read the module the way the starter and SysMoBench specs are written: one top-level definition per
block starting in column 0 (``Name ==`` or ``Name(args) ==``), actions as conjunctions (a ``/\\`` bullet list or an
inline ``A /\\ B``), ``Next`` as a disjunction (a ``\\/`` bullet list or inline, with ``\\E x \\in S : A(x)`` parts).
They check what they need and say so when a spec is written another way; the suite runs SANY on every mutant
(the cascade's syntax stage) so an operator that produced an unparseable module shows up in the report.

>>> noop_action(spec, "Put")        # Put keeps its guard, changes nothing
>>> drop_action_from_next(spec, "Get")
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sysmo.evals.metrics.tla_syntax import bracket_depths
from sysmo.evals.sensitivity import MutationError

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DEF_HEAD = re.compile(rf"^({IDENT})\s*(\([^)]*\))?\s*==")
_KEYWORDS = ("EXTENDS", "CONSTANT", "CONSTANTS", "VARIABLE", "VARIABLES", "ASSUME", "ASSUMPTION", "AXIOM",
             "THEOREM", "LEMMA", "RECURSIVE", "LOCAL", "INSTANCE")
_MODULE_HEAD = re.compile(r"^-{4,}\s*MODULE\s+(" + IDENT + r")\s*-{4,}\s*$", re.M)
_MODULE_END = re.compile(r"^={4,}\s*$", re.M)
# a whole identifier: not inside a longer one, but after the subscript of [][Next]_vars, <<A>>_v, WF_vars, SF_vars
_STRING_OR_WORD = (r'("(?:[^"\\]|\\.)*")|(?:(?<![A-Za-z0-9_])|(?<=[\]>)}}]_)|(?<=\bWF_)|(?<=\bSF_))'
                   r'{word}(?![A-Za-z0-9_])')
# a prime after an identifier or a closing bracket: x' , f[x]' , <<a, b>>'
_PRIME = re.compile(r"""[A-Za-z0-9_\)\]\}>]'""")


@dataclass
class Block:
    """One top-level unit of the module body: its leading comment/blank lines, then its own lines."""

    leading: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        match = _DEF_HEAD.match(self.lines[0]) if self.lines else None
        return match.group(1) if match else None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Module:
    """A module split into header, body blocks and footer (joined back by ``render``)."""

    header: str
    blocks: list[Block]
    trailing: list[str]
    footer: str

    def render(self) -> str:
        lines: list[str] = []
        for block in self.blocks:
            lines.extend(block.leading)
            lines.extend(block.lines)
        lines.extend(self.trailing)
        return self.header + "\n".join(lines) + self.footer

    def definition(self, name: str) -> Block:
        for block in self.blocks:
            if block.name == name:
                return block
        raise MutationError(f"the module defines no {name!r} at the top level (a line '{name} == ...' in column 0)")

    def names(self) -> list[str]:
        return [b.name for b in self.blocks if b.name]


def _is_head(line: str) -> bool:
    if not line or line[0] in " \t":
        return False
    if _DEF_HEAD.match(line):
        return True
    word = line.split(None, 1)[0]
    return word in _KEYWORDS


def parse_module(spec: str) -> Module:
    """Split ``spec`` into top-level blocks; a MutationError when it has no ``---- MODULE X ----`` / ``====`` lines."""
    head = _MODULE_HEAD.search(spec)
    if head is None:
        raise MutationError("no '---- MODULE Name ----' line: give the operator a whole TLA+ module")
    end = _MODULE_END.search(spec, head.end())
    if end is None:
        raise MutationError("no closing '====' line after the module header")
    header, body, footer = spec[: head.end() + 1], spec[head.end() + 1 : end.start()], spec[end.start() :]
    blocks: list[Block] = []
    pending: list[str] = []
    for line in body.split("\n"):
        if _is_head(line):
            blocks.append(Block(leading=pending, lines=[line]))
            pending = []
        elif not line.strip() or line.startswith(("\\*", "(*")) or not blocks:
            pending.append(line)
        else:  # an indented (or bullet) continuation line of the block above
            blocks[-1].lines.extend([*pending, line])
            pending = []
    return Module(header=header, blocks=blocks, trailing=pending, footer=footer)


def module_name(spec: str) -> str:
    head = _MODULE_HEAD.search(spec)
    if head is None:
        raise MutationError("no '---- MODULE Name ----' line")
    return head.group(1)


def _declared(module: Module, keywords: tuple[str, ...]) -> list[str]:
    names: list[str] = []
    for block in module.blocks:
        first = block.lines[0].split(None, 1)
        if first and first[0] in keywords:
            text = re.sub(r"\\\*.*", "", block.text[len(first[0]):])
            text = re.sub(r"\(\*.*?\*\)", "", text, flags=re.S)
            for part in text.split(","):
                match = re.match(rf"\s*({IDENT})", part)
                if match:
                    names.append(match.group(1))
    return names


def variables(spec: str) -> list[str]:
    """The module's declared variables, in order."""
    return _declared(parse_module(spec), ("VARIABLE", "VARIABLES"))


def constants(spec: str) -> list[str]:
    return _declared(parse_module(spec), ("CONSTANT", "CONSTANTS"))


def _replace_word(text: str, old: str, new: str) -> str:
    """Every whole-word ``old`` outside string literals becomes ``new``."""
    pattern = re.compile(_STRING_OR_WORD.format(word=re.escape(old)))
    return pattern.sub(lambda m: m.group(1) if m.group(1) is not None else new, text)


def _uses(text: str, word: str) -> bool:
    return any(m.group(1) is None for m in re.finditer(_STRING_OR_WORD.format(word=re.escape(word)), text))


def _body(block: Block) -> tuple[str, str]:
    """``Name(args) ==`` and what follows it."""
    text = block.text
    head = _DEF_HEAD.match(text)
    assert head is not None
    return text[: head.end()], text[head.end() :]


def _split_top(text: str, op: str) -> list[str]:
    """``text`` split at the operator ``op`` (``/\\`` or ``\\/``) where it stands at bracket depth 0, up to the
    first quantifier, IF, LET or CASE at depth 0 (whose scope runs to the end: the rest is one part)."""
    depths = bracket_depths(text)
    parts, start = [], 0
    for match in re.finditer(r"\\[EA]\b|\bIF\b|\bLET\b|\bCASE\b|" + re.escape(op), text):
        if depths[match.start()] != 0:
            continue
        if match.group(0) != op:
            break
        parts.append(text[start : match.start()])
        start = match.end()
    parts.append(text[start:])
    return parts


def _bullets(body: str, op: str) -> tuple[str, list[str], int] | None:
    """A bullet list of ``op`` (``/\\`` or ``\\/``): the text before the first bullet, the items (each with its
    bullet and continuation lines) and the bullets' column; None when ``body`` is not one."""
    lines = body.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or first == 0:  # bullets start on the lines after 'Name ==' (else: read inline)
        return None
    lead = lines[first]
    stripped = lead.lstrip()
    if not stripped.startswith(op):
        return None
    column = len(lead) - len(stripped)
    prefix = "\n".join(lines[1:first])
    items: list[list[str]] = []
    for line in lines[first:]:
        if line.strip() and len(line) - len(line.lstrip()) == column and line.lstrip().startswith(op):
            items.append([line])
        elif items and (not line.strip() or len(line) - len(line.lstrip()) > column):
            items[-1].append(line)
        else:
            return None
    return prefix, ["\n".join(item).rstrip() for item in items], column


def _primes(text: str) -> bool:
    cleaned = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return bool(_PRIME.search(cleaned)) or bool(re.search(r"\bUNCHANGED\b", cleaned))


def _conjuncts(block: Block) -> tuple[str, list[str], str, int | None]:
    """The action's head, its conjuncts (bullets without their ``/\\``), the joiner and the bullets' column."""
    head, body = _body(block)
    bullets = _bullets(body, "/\\")
    if bullets is not None:
        prefix, items, column = bullets
        return head + "\n" + (prefix + "\n" if prefix.strip() else ""), \
            [item.strip()[2:].strip() for item in items], "bullets", column
    return head + " ", [p.strip() for p in _split_top(body, "/\\")], "inline", None


def _join_conjuncts(head: str, conjuncts: list[str], style: str, column: int | None) -> list[str]:
    if style == "bullets":
        indent = " " * (column or 4)
        return [*head.rstrip("\n").split("\n"), *"\n".join(f"{indent}/\\ {c}" for c in conjuncts).split("\n")]
    return (head + " /\\ ".join(conjuncts)).split("\n")


# -- mutants


def next_actions(spec: str, next_name: str = "Next") -> list[str]:
    """The definitions ``Next`` names (the actions it is a disjunction of), in order of first use."""
    module = parse_module(spec)
    _, body = _body(module.definition(next_name))
    # an action primes a variable or says UNCHANGED (a set such as Procs or a predicate such as Receiving does not)
    actions = {b.name for b in module.blocks if b.name and b.name != next_name and _primes(_body(b)[1])}
    found: list[str] = []
    for match in re.finditer(IDENT, re.sub(r'"(?:[^"\\]|\\.)*"', '""', body)):
        word = match.group(0)
        if word in actions and word not in found:
            found.append(word)
    return found


def _reachable(module: Module, root: str) -> list[str]:
    """The top-level definitions ``root`` names, directly or through others, breadth-first (``root`` first)."""
    defined = set(module.names())
    seen, queue = [root], [root]
    while queue:
        _, body = _body(module.definition(queue.pop(0)))
        for word in dict.fromkeys(re.findall(IDENT, re.sub(r'"(?:[^"\\]|\\.)*"', '""', body))):
            if word in defined and word not in seen:
                seen.append(word)
                queue.append(word)
    return seen


def _disjunction_holding(module: Module, action: str, next_name: str) -> str:
    """The definition whose disjunction calls ``action``: ``Next`` itself, else the one definition ``Next`` reaches
    that does (a PGo or PlusCal translation's process, ``client(self) == A(self) \\/ B(self)``)."""
    if _uses(_body(module.definition(next_name))[1], action):
        return next_name
    holders = [name for name in _reachable(module, next_name)[1:] if name != action
               and _uses(_body(module.definition(name))[1], action)
               and len(_split_top(_body(module.definition(name))[1], "\\/")) > 1]
    if len(holders) != 1:
        where = "no disjunction" if not holders else f"{len(holders)} disjunctions ({', '.join(holders)})"
        raise MutationError(f"{where} reachable from {next_name} calls the action {action!r} "
                            f"({next_name} names {next_actions(module.render(), next_name)})")
    return holders[0]


def drop_action_from_next(spec: str, action: str, next_name: str = "Next") -> str:
    """The next-state relation without the step ``action``: its disjunct (``\\/ A(x)``, a ``(\\E x \\in S : A(x))``
    part or a bullet) dropped from ``Next`` or, when Next reaches it through a process definition
    (``client(self) == A(self) \\/ unlock(self)``), from that definition; the action's definition stays, so a trace
    replay can still call it by name. MutationError when no such disjunction calls it or it is the only disjunct."""
    module = parse_module(spec)
    next_name = _disjunction_holding(module, action, next_name)
    block = module.definition(next_name)
    head, body = _body(block)
    bullets = _bullets(body, "\\/")
    if bullets is not None:
        prefix, items, _ = bullets
        holding = [i for i, item in enumerate(items) if _uses(item, action)]
        if len(holding) != 1:
            raise MutationError(f"{action!r} appears in {len(holding)} bullets of {next_name}: drop it by hand")
        index = holding[0]
        item = items[index]
        others = [a for a in next_actions(spec, next_name) if a != action and _uses(item, a)]
        if not others:  # the bullet is this action alone (maybe under a quantifier): drop the bullet
            if len(items) == 1:
                raise MutationError(f"{action!r} is the only disjunct of {next_name}")
            items = items[:index] + items[index + 1 :]
        else:
            items[index] = _drop_disjunct(item, action)
        block.lines = [head, *([prefix] if prefix.strip() else []), *"\n".join(items).split("\n")]
        return module.render()
    block.lines = (head + _drop_disjunct(body, action)).split("\n")
    return module.render()


def _drop_disjunct(text: str, action: str) -> str:
    """``text`` without the disjunct that calls ``action`` and the ``\\/`` next to it."""
    cleaned = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: "_" * len(m.group(0)), text)
    call = re.search(rf"\b{re.escape(action)}\b", cleaned)
    assert call is not None
    start, end = call.start(), call.end()
    depths = bracket_depths(cleaned)
    if end < len(cleaned) and cleaned[end:].lstrip().startswith("("):  # the call's arguments
        open_at = end + (len(cleaned[end:]) - len(cleaned[end:].lstrip()))
        level = depths[open_at]
        close = next((i for i in range(open_at + 1, len(cleaned)) if cleaned[i] == ")" and depths[i] == level), None)
        if close is None:
            raise MutationError(f"unbalanced parentheses after {action!r} in Next")
        end = close + 1
    # the enclosing parenthesised group, when it holds just this call (e.g. '(\E p \in S : Put(p))')
    level = depths[start]
    if level > 0:
        open_at = max(i for i in range(start) if cleaned[i] == "(" and depths[i] == level - 1)
        close_at = next(i for i in range(end, len(cleaned)) if cleaned[i] == ")" and depths[i] == level - 1)
        inner = cleaned[open_at + 1 : close_at]
        if "\\/" not in inner:
            start, end = open_at, close_at + 1
    before = cleaned[:start].rstrip()
    after = cleaned[end:]
    # a bullet's own \/ (nothing before it on its line) stays when an infix \/ follows: '\/ A \/ B' -> '\/ B'
    bullet = before.endswith("\\/") and not before[:-2].split("\n")[-1].strip()
    if before.endswith("\\/") and not (bullet and after.lstrip().startswith("\\/")):
        return text[: len(before) - 2].rstrip() + text[end:]
    if after.lstrip().startswith("\\/"):
        skip = len(after) - len(after.lstrip()) + 2
        return text[:start] + text[end + skip :].lstrip(" ")
    raise MutationError(f"{action!r} is the only disjunct in its part of Next: nothing left to keep")


def noop_action(spec: str, action: str) -> str:
    """``action`` keeps its guards and changes nothing: every conjunct that primes a variable or says UNCHANGED
    becomes one ``UNCHANGED <<all variables>>``. MutationError when it has no such conjunct or already changes
    nothing."""
    module = parse_module(spec)
    block = module.definition(action)
    head, conjuncts, style, column = _conjuncts(block)
    names = variables(spec)
    if not names:
        raise MutationError("the module declares no VARIABLES")
    guards = [c for c in conjuncts if not _primes(c)]
    changing = [c for c in conjuncts if _primes(c)]
    if not changing:
        raise MutationError(f"{action!r} has no conjunct that primes a variable (is it an action?)")
    if all(re.fullmatch(r"UNCHANGED\s+\S+", c.strip()) and not _PRIME.search(c) for c in changing) and \
            all(re.fullmatch(r"UNCHANGED\s+(vars|<<[^>]*>>)", c.strip()) for c in changing):
        listed = " ".join(changing)
        if all(_uses(listed, v) for v in names) or "vars" in listed:
            raise MutationError(f"{action!r} already changes no variable")
    unchanged = "UNCHANGED " + (names[0] if len(names) == 1 else "<<" + ", ".join(names) + ">>")
    block.lines = _join_conjuncts(head, [*guards, unchanged], style, column)
    return module.render()


def guards(spec: str, action: str) -> list[str]:
    """The conjuncts of ``action`` that prime no variable (its enabling conditions), as written."""
    _, conjuncts, _, _ = _conjuncts(parse_module(spec).definition(action))
    return [c for c in conjuncts if not _primes(c)]


def weaken_guard(spec: str, action: str, guard: str | None = None) -> str:
    """``action`` without one of its guards: the conjunct that contains the text ``guard``, else the last conjunct
    that primes no variable. MutationError when the action has no such conjunct (or none matching)."""
    module = parse_module(spec)
    block = module.definition(action)
    head, conjuncts, style, column = _conjuncts(block)
    candidates = [i for i, c in enumerate(conjuncts) if not _primes(c) and (guard is None or guard in c)]
    if not candidates:
        which = f" containing {guard!r}" if guard else ""
        raise MutationError(f"{action!r} has no guard{which} (a conjunct that primes no variable)")
    if len(conjuncts) < 2:
        raise MutationError(f"{action!r} is a single conjunct: dropping it leaves no action")
    drop = candidates[-1]
    block.lines = _join_conjuncts(head, conjuncts[:drop] + conjuncts[drop + 1 :], style, column)
    return module.render()


def rename_variable(spec: str, old: str, new: str) -> str:
    """The variable ``old`` is called ``new`` everywhere (string literals left alone). MutationError when ``old``
    is not a declared variable or ``new`` is already a name of the module."""
    if old not in variables(spec):
        raise MutationError(f"{old!r} is not a declared variable (the module has {variables(spec)})")
    if _uses(spec, new):
        raise MutationError(f"{new!r} is already used in the module: choose another name")
    return _replace_word(spec, old, new)


def _init_literal_swap(conjunct: str, variable: str, spec: str) -> str | None:
    """``conjunct`` (``v = value``) with the value replaced by another of its kind, or None."""
    match = re.fullmatch(rf"\s*{re.escape(variable)}\s*=\s*(.+?)\s*", conjunct, flags=re.S)
    if match is None:
        return None
    value = match.group(1)
    start = conjunct.index(value, conjunct.index("="))
    replaced: str | None = None
    if value in ("TRUE", "FALSE"):
        replaced = "FALSE" if value == "TRUE" else "TRUE"
    elif re.fullmatch(r"\d+", value):
        replaced = str(int(value) + 1)
    elif re.fullmatch(r'"[^"]*"', value) or re.search(r'\|->\s*"[^"]*"\s*\]$', value):
        current = re.findall(r'"([^"]*)"', value)[-1]
        # another string the spec assigns to this variable (x' = "s" or [x EXCEPT ![k] = "s"])
        name = re.escape(variable)
        assigned = re.findall(rf'\b{name}\'\s*=\s*(?:\[\s*{name}\s+EXCEPT[^\n]*?=\s*)?"([^"]*)"', spec)
        others = [s for s in assigned if s != current]
        if others:
            replaced = value[: value.rindex(f'"{current}"')] + f'"{others[0]}"' + value[value.rindex(f'"{current}"')
                                                                                       + len(current) + 2 :]
    elif re.fullmatch(r"<<\s*>>", value):
        replaced = "<<1>>"
    if replaced is None:
        return None
    return conjunct[:start] + replaced + conjunct[start + len(value) :]


def swap_init_values(spec: str, variable: str | None = None) -> str:
    """``Init`` with one variable's initial value swapped for another of its kind (the first variable, in Init's
    order, whose value is a boolean, a number, a string or a function to one string the spec also assigns to
    it, or the empty sequence): TRUE <-> FALSE, n -> n + 1, "s" -> another assigned "t", <<>> -> <<1>>."""
    module = parse_module(spec)
    block = module.definition("Init")
    head, conjuncts, style, column = _conjuncts(block)
    names = [variable] if variable else variables(spec)
    for i, conjunct in enumerate(conjuncts):
        for name in names:
            swapped = _init_literal_swap(conjunct, name, spec)
            if swapped is not None:
                conjuncts[i] = swapped.strip()
                block.lines = _join_conjuncts(head, conjuncts, style, column)
                return module.render()
    which = f" of {variable!r}" if variable else ""
    raise MutationError(f"Init gives no initial value{which} this operator can swap (a boolean, a number, a "
                        "string the spec also assigns, or <<>>)")


def trivial_unrelated_spec(spec: str) -> str:
    """A module of the same name and constants whose only variable counts 0, 1, 0, ...: syntactically fine, runs
    without error, and has nothing to do with the system (``Init``, ``Next`` and ``Spec`` as a cfg expects)."""
    name = module_name(spec)
    declared = constants(spec)
    used = set(re.findall(IDENT, spec))
    tick = next(t for t in ("tick", "tock", "sensitivityTick") if t not in used)
    lines = [f"---- MODULE {name} ----", "EXTENDS Naturals"]
    if declared:
        lines.append("CONSTANTS " + ", ".join(declared))
    lines += [f"VARIABLE {tick}", f"Init == {tick} = 0", f"Next == {tick}' = 1 - {tick}",
              f"Spec == Init /\\ [][Next]_{tick}", "===="]
    return "\n".join(lines) + "\n"


# -- semantics-preserving variants


def reorder_definitions(spec: str) -> str:
    """The top-level definitions in another order that still defines every name before its use: within each run
    of definitions between declarations (CONSTANTS, VARIABLES, ASSUME, ...), the latest-written definition whose
    dependencies are placed goes first. MutationError when no other order is possible."""
    module = parse_module(spec)
    out: list[Block] = []
    run: list[Block] = []
    changed = False

    def flush() -> None:
        nonlocal changed
        names = {b.name for b in run}
        graph = {b.name: {n for n in names if n != b.name and _uses(b.text, n)} for b in run}
        remaining, placed, done = list(run), [], set()
        while remaining:
            ready = [b for b in remaining if graph[b.name] <= done]
            pick = ready[-1] if ready else remaining[0]  # the latest-written ready one; a cycle keeps its order
            placed.append(pick)
            done.add(pick.name)
            remaining.remove(pick)
        changed |= [b.name for b in placed] != [b.name for b in run]
        out.extend(placed)
        run.clear()

    for block in module.blocks:
        if block.name:
            run.append(block)
        else:
            flush()
            out.append(block)
    flush()
    if not changed:
        raise MutationError("every definition depends on the one before it: no other order defines names before use")
    module.blocks = out
    return module.render()


def rename_definition(spec: str, old: str, new: str) -> str:
    """The top-level definition ``old`` is called ``new`` everywhere (a consistent rename). MutationError when
    the module does not define ``old`` or already uses ``new``."""
    if old not in parse_module(spec).names():
        raise MutationError(f"the module defines no {old!r} at the top level")
    if _uses(spec, new):
        raise MutationError(f"{new!r} is already used in the module: choose another name")
    return _replace_word(spec, old, new)
