"""Pull the artifact out of an LLM reply: code fences, JSON wrappers, prose around it, several files.

>>> extract_artifact("Here:\\n```plantuml\\n@startuml\\nclass A\\n@enduml\\n```", Language.PLANTUML).artifact.main_text
'@startuml\\nclass A\\n@enduml'
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact, Language
from sysmo.llm.response import Fenced, fenced_blocks, json_payload

TLA_MODULE = re.compile(r"^-{4,}\s*MODULE\s+(\w+)\s*-{4,}.*?^={4,}[ \t]*$", re.S | re.M)
TLA_MODULE_HEAD = re.compile(r"-{4,}\s*MODULE\s+(\w+)\s*-{4,}")
CFG_KEYWORDS = re.compile(r"^\s*(SPECIFICATION|INIT|NEXT|CONSTANTS?|INVARIANTS?|PROPERT(Y|IES)|SYMMETRY|VIEW|CONSTRAINTS?|ACTION_CONSTRAINTS?|CHECK_DEADLOCK)\b", re.M)
PLANTUML_BLOCK = re.compile(r"@startuml.*?(?:@enduml|\Z)", re.S)
FILENAME_HINT = re.compile(r"([\w./-]+\.(?:tla|cfg|sysml|puml|plantuml))\b")

LANGUAGE_TAGS = {
    Language.TLA: {"tla", "tla+", "tlaplus", "tla-plus", "pluscal"},
    Language.SYSML: {"sysml", "sysmlv2", "sysml2", "kerml"},
    Language.PLANTUML: {"plantuml", "puml", "uml"},
}
CFG_TAGS = {"cfg", "tlc", "config", "tla-cfg", "ini"}


class ExtractionResult(BaseModel):
    """The artifact found in a reply (None if none), and what was noticed on the way."""

    artifact: Artifact | None = None
    error: str | None = None  # set when nothing usable was found: fed back to the model
    notes: list[str] = Field(default_factory=list)
    truncated: bool = False


def _fences(text: str, blocks: list[Fenced]) -> list[tuple[str, str, bool, int]]:
    """(info string, body, closed?, start offset) for every fenced block."""
    return [(b.info.strip().lower(), b.body, b.closed(text), b.start) for b in blocks]


def _json_payload(text: str, blocks: list[Fenced]) -> dict[str, str] | None:
    """A reply that is (or holds, in a json / untagged block) a JSON object with the files, e.g. {"spec": ..., "cfg": ...}."""
    data = json_payload(text, within_prose=False, blocks=blocks)
    if isinstance(data, dict):
        files = data.get("files") if isinstance(data.get("files"), dict) else data
        strings = {str(k): v for k, v in files.items() if isinstance(v, str) and v.strip()}
        if strings:
            return strings
    return None


def _name_hint(text: str, start: int) -> str | None:
    """A file name mentioned on the line just before a fence (``**Spec.cfg**``, ``File: Spec.cfg``)."""
    before = text[:start].rstrip().rsplit("\n", 1)[-1]
    match = FILENAME_HINT.search(before)
    return match.group(1).rsplit("/", 1)[-1] if match else None


def _tla_files(blocks: list[tuple[str, str, str | None]], module_name: str | None) -> dict[str, str]:
    files: dict[str, str] = {}
    for info, body, hint in blocks:
        head = TLA_MODULE_HEAD.search(body)
        if head:
            name = head.group(1)
            files.setdefault(f"{name}.tla", body.strip() + "\n")
        elif (hint or "").endswith(".cfg") or info in CFG_TAGS or (CFG_KEYWORDS.search(body) and "==" not in body):
            files.setdefault("__cfg__", body.strip() + "\n")
    cfg = files.pop("__cfg__", None)
    if cfg is not None:
        mains = [n for n in files if n.endswith(".tla")]
        main = f"{module_name}.tla" if module_name and f"{module_name}.tla" in files else (mains[0] if mains else None)
        files[(main or f"{module_name or 'Spec'}.tla")[:-4] + ".cfg"] = cfg
    return files


def extract_artifact(text: str | None, language: Language | str, module_name: str | None = None) -> ExtractionResult:
    """Find the model in ``text``. TLA+ may yield several files (``.tla`` modules and a ``.cfg``)."""
    language = Language(language)
    if text is None or not text.strip():
        return ExtractionResult(error="The reply was empty: answer with the complete model in one fenced code block.")
    notes: list[str] = []
    blocks = fenced_blocks(text)  # found once, for the JSON check and the fences
    fences = _fences(text, blocks)
    truncated = any(not closed for _, _, closed, _ in fences)
    if truncated:
        notes.append("a code block was not closed (the reply may be truncated)")

    payload = _json_payload(text, blocks)
    if payload is not None:
        notes.append("files taken from a JSON object")
        if language == Language.TLA:
            blocks = [(k.lower(), v, k if "." in k else None) for k, v in payload.items()]
            files = _tla_files(blocks, module_name)
            if files:
                return ExtractionResult(artifact=Artifact(language=language, files=files), notes=notes, truncated=truncated)
        else:
            body = max(payload.values(), key=len)
            return _single(language, body, notes, truncated)

    tags = LANGUAGE_TAGS[language]
    tagged = [(info, body, _name_hint(text, start)) for info, body, _, start in fences
              if info.split()[0:1] and info.split()[0] in tags | CFG_TAGS]
    untagged = [(info, body, _name_hint(text, start)) for info, body, _, start in fences if not info]
    chosen = tagged or untagged or [(info, body, _name_hint(text, start)) for info, body, _, start in fences]
    if language == Language.TLA:  # a module and its cfg often come in differently tagged blocks
        chosen = tagged + untagged or chosen

    if language == Language.TLA:
        files = _tla_files(chosen, module_name) if chosen else {}
        if not any(n.endswith(".tla") for n in files):
            for m in TLA_MODULE.finditer(text):
                files[f"{m.group(1)}.tla"] = m.group(0).strip() + "\n"
            if files:
                notes.append("module found in prose without a code block")
        if not any(n.endswith(".tla") for n in files):
            head = TLA_MODULE_HEAD.search(text)
            if head:  # a module header without its closing ==== line: truncated output
                body = text[head.start():]
                body = body.split("```", 1)[0]
                files[f"{head.group(1)}.tla"] = body.strip() + "\n"
                truncated = True
                notes.append("module has no closing ==== line (truncated?)")
        if not any(n.endswith(".tla") for n in files):
            return ExtractionResult(error="No TLA+ module found: give the complete module, from "
                                    "`---- MODULE Name ----` to `====`, in a ```tla code block.", notes=notes,
                                    truncated=truncated)
        return ExtractionResult(artifact=Artifact(language=language, files=files), notes=notes, truncated=truncated)

    if chosen:
        body = max((b for _, b, _ in chosen), key=len) if language == Language.SYSML else chosen[0][1]
        if language == Language.PLANTUML:
            with_start = [b for _, b, _ in chosen if "@startuml" in b]
            body = with_start[0] if with_start else body
        return _single(language, body, notes, truncated)
    if language == Language.PLANTUML:
        block = PLANTUML_BLOCK.search(text)
        if block:
            notes.append("diagram found in prose without a code block")
            return _single(language, block.group(0), notes, truncated or "@enduml" not in block.group(0))
        return ExtractionResult(error="No PlantUML diagram found: give the complete diagram from @startuml to "
                                "@enduml in a ```plantuml code block.", notes=notes)
    match = re.search(r"^\s*(package|library package|standard library package|part def|part|import)\b", text, re.M)
    if match:
        notes.append("model found in prose without a code block")
        return _single(language, text[match.start():], notes, truncated)
    return ExtractionResult(error="No SysML v2 model found: give the complete textual model in a ```sysml code block.",
                            notes=notes)


def _single(language: Language, body: str, notes: list[str], truncated: bool) -> ExtractionResult:
    suffix = {Language.SYSML: "model.sysml", Language.PLANTUML: "diagram.puml", Language.TLA: "Spec.tla"}[language]
    body = body.strip("\n")
    if not body.strip():
        return ExtractionResult(error="The code block was empty: give the complete model.", notes=notes)
    return ExtractionResult(artifact=Artifact(language=language, files={suffix: body}), notes=notes, truncated=truncated)
