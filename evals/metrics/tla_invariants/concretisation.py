"""Concretisation: per invariant template, a formula over the model's names that SANY accepts.

Concretisation, per template, first that works:
1. the template's ``tla_example`` as written, if SANY accepts it in a module that EXTENDS the model
   (the example's own helper definitions are kept unless the model already defines those names);
2. the helper model (prompt ``evals/prompts/tla_invariant.md``), answering with one definition, checked by
   SANY the same way; a rejected answer is sent back once with SANY's message. An answer that is just the
   initial predicate, the next-state relation, the specification or TRUE is refused (it cannot fail, or
   fails at the first step: the reference harness even offers ``Init`` as a candidate).
Without either, the template is not concretised: an ``error``, not holding.

SANY checks all candidate formulas in one module (``combined_definitions``), then each wrapper alone only if that
module is rejected: one parse of the model instead of two per template (the PGo raftkvs spec is 2.3 MB).
"""

from __future__ import annotations

import importlib.resources
import re
from typing import Any

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.errors import LLMError
from sysmo.evals.metrics.tla_invariants.formulas import (
    WRAPPER_PREFIX,
    Candidate,
    _vacuous,
    combined_module,
    parse_candidate,
    unknown_names,
    wrapper_module,
)
from sysmo.evals.metrics.tla_invariants.settings import DEFAULT_HELPER_ATTEMPTS
from sysmo.evals.metrics.tla_syntax import check_modules, split_module
from sysmo.tools.tla import cfg as tlc_cfg
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla.trace_validation import signature

PROMPT_FILE = "tla_invariant.md"
CODE_BLOCK = re.compile(r"```(?:tla\+?|TLA\+?)?[ \t]*\n(.*?)```", re.DOTALL)


class _Resolver:
    """Finds a candidate per template that SANY accepts against the model, batching the SANY runs."""

    def __init__(self, artifact: Artifact, timeout_s: float) -> None:
        self.spec = prepare(artifact)
        self.tla_files = {n: t for n, t in self.spec.files.items() if n.endswith(".tla")}
        sig = signature(Artifact(language=Language.TLA, files=self.tla_files), self.spec.main_module)
        self.spec_names = set(sig.operators) | set(sig.variables) | set(sig.constants)
        self.timeout_s = timeout_s
        self.sany_version = ""
        taken = {n.removesuffix(".tla") for n in self.tla_files}
        self.prefix = WRAPPER_PREFIX
        while any(t.startswith(self.prefix) for t in taken):
            self.prefix += "X"

    def example(self, template: InvariantTemplate) -> Candidate | None:
        """The template's ``tla_example`` as a candidate for this model, or None (none, or a vacuous one)."""
        if not template.tla_example.strip():
            return None
        candidate = parse_candidate(template.tla_example, template.name, self.spec_names,
                                    self.spec.files[self.spec.main_file])
        return None if candidate is None or _vacuous(candidate) else candidate

    def check(self, candidates: dict[int, Candidate]) -> dict[int, tuple[str | None, str]]:
        """index -> (the wrapper module text SANY accepts, or None; SANY's first error).

        Several candidates are first checked together in one module (``combined_definitions``): one parse of
        the model instead of two per candidate (the PGo raftkvs spec is 2.3 MB). If SANY rejects it, or the
        candidates are not isolated from each other, each wrapper is checked on its own, as always."""
        if len(candidates) > 1:
            name = f"{self.prefix}All"
            module = combined_module(name, self.spec.main_module, candidates, self.spec_names)
            if module is not None:
                together, version = check_modules({name: module}, self.tla_files, self.timeout_s)
                self.sany_version = self.sany_version or version
                if together[name].outcome == Outcome.OK:
                    return {i: (wrapper_module(f"{self.prefix}{i}", self.spec.main_module, c), "")
                            for i, c in candidates.items()}
        modules: dict[str, str] = {}
        for index, candidate in candidates.items():
            for standard in (True, False):  # the standard modules may clash with the model's own names
                name = f"{self.prefix}{index}{'' if standard else 'b'}"
                modules[name] = wrapper_module(name, self.spec.main_module, candidate, standard)
        if not modules:
            return {}
        verdicts, version = check_modules(modules, self.tla_files, self.timeout_s)
        self.sany_version = self.sany_version or version
        out: dict[int, tuple[str | None, str]] = {}
        for index in candidates:
            first, second = f"{self.prefix}{index}", f"{self.prefix}{index}b"
            if verdicts[first].outcome == Outcome.OK:
                out[index] = (modules[first], "")
            elif verdicts[second].outcome == Outcome.OK:
                out[index] = (modules[second], "")
            else:
                out[index] = (None, verdicts[first].message)
        return out


def _prompt(template: InvariantTemplate, spec_text: str) -> str:
    text = importlib.resources.files("sysmo.evals.prompts").joinpath(PROMPT_FILE).read_text(encoding="utf-8")
    kind_rule = (
        "It is a safety property: a state predicate that must hold in every reachable state (or, for a "
        "property of steps, a formula [][A]_v)."
        if template.type == "safety"
        else "It is a liveness property: a temporal formula (for example P ~> Q, or []<>P) that the "
        "specification's fairness conditions should guarantee."
    )
    values = {
        "spec": spec_text,
        "name": template.name,
        "kind": template.type,
        "natural_language": template.natural_language,
        "formal_description": template.formal_description,
        "tla_example": template.tla_example.strip() or "(none)",
        "kind_rule": kind_rule,
    }
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), text)


def _answer_text(text: str) -> str:
    blocks = CODE_BLOCK.findall(text or "")
    return blocks[-1] if blocks else (text or "")


def concretise(
    artifact: Artifact,
    templates: list[InvariantTemplate],
    *,
    helper: Any = None,
    task_id: str | None = None,
    attempts: int = DEFAULT_HELPER_ATTEMPTS,
    timeout_s: float = 60.0,
) -> tuple[list[tuple[Candidate | None, str | None, str, list[str]]], str, str | None]:
    """Per template: (candidate, wrapper text or None, source, notes); and the SANY version, helper model."""
    resolver = _Resolver(artifact, timeout_s)
    results: list[tuple[Candidate | None, str | None, str, list[str]]] = [
        (None, None, "none", []) for _ in templates
    ]
    first: dict[int, Candidate] = {}
    for i, template in enumerate(templates):
        candidate = resolver.example(template)
        if candidate is not None:
            first[i] = candidate
        else:
            results[i][3].append("the template has no usable tla_example")
    for i, (wrapper, error) in resolver.check(first).items():
        if wrapper is not None:
            results[i] = (first[i], wrapper, "template", results[i][3])
        else:
            results[i][3].append(f"the template's example does not fit the model: {error[:300]}")
    helper_model = None
    if helper is not None:
        from sysmo.llm import CallContext

        spec_text = resolver.spec.files[resolver.spec.main_file]
        conversations = {
            i: [{"role": "user", "content": _prompt(templates[i], spec_text)}]
            for i, r in enumerate(results)
            if r[1] is None
        }
        for _ in range(max(1, attempts)):
            if not conversations:
                break
            proposed: dict[int, Candidate] = {}
            for i, messages in list(conversations.items()):
                try:
                    response = helper.complete(
                        messages,
                        role="helper",
                        temperature=0.0,
                        context=CallContext(task_id=task_id, purpose="invariant"),
                    )
                except LLMError as exc:
                    results[i][3].append(f"helper failed: {str(exc)[:300]}")
                    conversations.pop(i)
                    continue
                helper_model = helper_model or response.model
                messages.append({"role": "assistant", "content": response.text or ""})
                candidate = parse_candidate(
                    _answer_text(response.text), templates[i].name, resolver.spec_names, spec_text
                )
                if candidate is None or _vacuous(candidate):
                    why = (
                        "answered with no definition of the property"
                        if candidate is None
                        else f"answered with {candidate.body.strip()!r}, which is not the property"
                    )
                    results[i][3].append(f"helper {why}")
                    messages.append(
                        {
                            "role": "user",
                            "content": f"That is not usable: you {why}. Answer with the "
                            f"definition {templates[i].name} == ... of the property itself.",
                        }
                    )
                    continue
                proposed[i] = candidate
            for i, (wrapper, error) in resolver.check(proposed).items():
                if wrapper is not None:
                    results[i] = (proposed[i], wrapper, "helper", results[i][3])
                    conversations.pop(i)
                else:
                    results[i][3].append(f"SANY rejected the helper's formula: {error[:300]}")
                    conversations[i].append(
                        {
                            "role": "user",
                            "content": "SANY rejects it when the definition is "
                            f"added to a module that EXTENDS the specification:\n{error}\n"
                            "Correct the definition; answer with the whole definition again.",
                        }
                    )
    return results, resolver.sany_version, helper_model


def _examples_as_written(artifact: Artifact, templates: list[InvariantTemplate],
                         ) -> list[tuple[Candidate | None, str | None, str, list[str]]] | None:
    """``concretise``'s answer without running SANY, when every template's example is usable and uses only names
    the model defines (``unknown_names``): each wrapper as SANY would accept it. None otherwise."""
    resolver = _Resolver(artifact, 0.0)
    results: list[tuple[Candidate | None, str | None, str, list[str]]] = []
    for i, template in enumerate(templates):
        candidate = resolver.example(template)
        if candidate is None or unknown_names(candidate, resolver.spec_names):
            return None
        results.append((candidate, wrapper_module(f"{resolver.prefix}{i}", resolver.spec.main_module, candidate),
                        "template", []))
    return results or None


def templates_from_cfg(artifact: Artifact) -> list[InvariantTemplate]:
    """The checks a spec's own cfg lists, as templates whose example is the spec's own definition."""
    spec = prepare(artifact)
    own = spec.files.get(f"{spec.main_module}.cfg")
    if own is None:
        return []
    config = tlc_cfg.parse(own)
    units = split_module(spec.files[spec.main_file])
    templates = []
    for kind, name in config.checks:
        definition = units.definition(name)
        templates.append(
            InvariantTemplate(
                name=name,
                type="safety" if kind == "invariant" else "liveness",
                natural_language=f"{name}, as the specification's own configuration checks it",
                tla_example=definition.text if definition else name,
            )
        )
    return templates
