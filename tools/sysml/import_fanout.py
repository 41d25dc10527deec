"""Imports that send OpenSysML's name resolver into a walk exponential in their number, found in the text.

OpenSysML v0.11.0 resolves an import's target aside from the import itself, and does not remember a miss
(``internal/semantic/resolve/unqualified.go``, ``eachImportMatch``: "a miss here may only mean sibling imports
were suspended"). To resolve a name ``P`` that nothing declares, it asks every sibling import whose path starts
with ``P`` (and that can surface ``P``: a bare ``import P``, which is also what ``import org.omg.X`` parses to,
or a namespace import ``import P::*``), and each of those resolves ``P`` again among the others: k such imports
cost about k! walks. A stack dump of a kernel that hangs on a DesignBench prediction shows exactly that
(``resolveImportName`` -> ``lookupImports`` -> ``eachImportMatch`` -> ``importTargetOf``, hundreds of frames
deep). Measured: 6 bare imports answer at once (6 namespace imports that every reference of a 5 KB body
walks, 13-20 s); 8 take 0.3-8 s, 9 3-8 s, 10 over 15 s, 13 no answer in 150 s.

The bound is a property of the text, never of the time a load took: a model with more than
``MAX_REWALKING_IMPORTS`` such imports of one name that names nothing (not mentioned in the model's files
outside their import lines, and unresolved by OpenSysML in a one-line probe, so a library package such as
``ISQ`` never counts) is loaded beside a stub file that declares the name and the namespaces its imports name
in it (``validate``): the resolver then answers at once. A file parses alone, so a syntax error the kernel
reports in the model's own files is the model's: the check fails with those errors; with none, the check is
``inconclusive`` (no verdict, as for a time-out, but the same answer at every load). Of DesignBench's 10,189
distinct predictions 37 are over the bound, all of them with syntax errors (8 of them hung the kernel before,
one took 13-20 s).

>>> rewalking_imports({"m.sysml": "package P\\nimport org.omg::A\\nimport org.omg::B\\nimport org::C;\\n"})
{'org': 2}
"""

from __future__ import annotations

import re
from collections import Counter

MAX_REWALKING_IMPORTS = 5  # 6 namespace imports, walked by every reference of a 5 KB body: 13-20 s loaded

# an import's path as far as OpenSysML's qualified names go: its first segment, then any `::` segments
_IMPORT = re.compile(r"(?m)^[ \t]*(?:(?:public|private|protected)\s+)?import\s+(?:all\s+)?"
                     r"([A-Za-z_]\w*)([^\n]*)$")
_IMPORT_LINE = re.compile(r"(?m)^[ \t]*(?:(?:public|private|protected)\s+)?import\b[^\n]*$")


def _rewalks(rest: str) -> bool:
    """Whether an import whose path starts with a name continues (``rest``, the rest of its line) in a form
    that can surface that name, so every lookup of it walks the import: nothing more (``import org;``), a
    namespace import (``org::*``), or a dotted path (``import org.omg.core::Block``: the dots are no
    qualified-name separator, and the parser keeps ``org`` alone as the import's target). A membership import
    of a qualified name (``org::X``) names only ``X``: the resolver skips it."""
    rest = rest.split("//", 1)[0].strip()
    if rest.startswith("::"):
        return re.match(r"^(?:\s*::\s*[A-Za-z_]\w*)*\s*::\s*\*\*?\s*(?:;|$)", rest) is not None
    return True


def rewalking_imports(files: dict[str, str]) -> dict[str, int]:
    """First name -> how many imports of the model start with it in a form the resolver re-walks, for the
    names no file mentions outside its import lines (a name the model declares resolves, and stops the walk)."""
    counts: Counter[str] = Counter()
    for text in files.values():
        counts.update(m.group(1) for m in _IMPORT.finditer(text) if _rewalks(m.group(2)))
    if not counts:
        return {}
    outside = " ".join(_IMPORT_LINE.sub(" ", text) for text in files.values())
    return {name: n for name, n in counts.items() if not re.search(rf"(?<![\w']){re.escape(name)}(?![\w'])", outside)}


def fanout_candidate(files: dict[str, str]) -> tuple[str, int] | None:
    """The name with the most re-walking imports when they exceed the bound (it still has to be probed: it
    may be a library package), else None."""
    over = [(n, name) for name, n in rewalking_imports(files).items() if n > MAX_REWALKING_IMPORTS]
    if not over:
        return None
    n, name = max(over)
    return name, n


def probe_model(name: str) -> dict[str, str]:
    """A one-line model that imports ``name``'s members: OpenSysML reports it unresolved when nothing has it."""
    return {"probe.sysml": f"package SysmoImportProbe {{ private import {name}::*; }}\n"}


def stub_model(name: str, files: dict[str, str]) -> str:
    """A model declaring ``name`` and, nested in it, every namespace its imports name (``import P::a::b::*``
    -> ``package P { package a { package b; } }``), so each of those imports resolves at once."""
    tree: dict[str, dict] = {}
    for text in files.values():
        for m in _IMPORT.finditer(text):
            if m.group(1) != name or not _rewalks(m.group(2)):
                continue
            rest = m.group(2).split("//", 1)[0].strip()
            segments = re.findall(r"::\s*([A-Za-z_]\w*)", rest) if rest.startswith("::") else []
            node = tree
            for segment in segments:
                node = node.setdefault(segment, {})

    def declare(label: str, children: dict[str, dict]) -> str:
        if not children:
            return f"package {label};"
        return f"package {label} {{ " + " ".join(declare(k, v) for k, v in sorted(children.items())) + " }"

    return declare(name, tree) + "\n"


def fanout_message(name: str, count: int) -> str:
    return (f"not loaded: {count} imports start with '{name}', which names nothing in the model or the library; "
            f"OpenSysML's name resolver walks such imports in a time exponential in their number (more than "
            f"{MAX_REWALKING_IMPORTS} take minutes to hours), so no verdict is given. Import qualified names of "
            "the standard library (for example `private import ScalarValues::*;`) or declare what you import")
