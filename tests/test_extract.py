"""Artifact extraction from realistic (and broken) LLM replies."""

from sysmo.contracts.artifact import Language
from sysmo.graphs.extract import extract_artifact

TLA = "---- MODULE Spin ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == x' = x + 1\n===="


def test_tla_module_and_cfg_from_two_fences_with_prose():
    reply = f"Sure! Here is the spec.\n\n```tla\n{TLA}\n```\n\nAnd the config:\n\n```\nINIT Init\nNEXT Next\n```\nHope it helps."
    r = extract_artifact(reply, Language.TLA)
    assert r.error is None
    assert set(r.artifact.files) == {"Spin.tla", "Spin.cfg"}
    assert r.artifact.files["Spin.cfg"].startswith("INIT Init")


def test_tla_from_json_wrapper():
    import json

    reply = json.dumps({"spec": TLA, "cfg": "SPECIFICATION Spec\n"})
    r = extract_artifact(reply, Language.TLA)
    assert set(r.artifact.files) == {"Spin.tla", "Spin.cfg"}


def test_tla_in_prose_without_fences_and_truncated_module():
    r = extract_artifact("The model:\n" + TLA + "\nThat's all.", Language.TLA)
    assert r.artifact.files["Spin.tla"].strip().endswith("====")
    r2 = extract_artifact("```tla\n---- MODULE Half ----\nVARIABLE x\nInit == x = ", Language.TLA)
    assert r2.truncated and "Half.tla" in r2.artifact.files


def test_file_name_hint_before_fence_names_the_cfg():
    reply = f"**Spin.tla**\n```tla\n{TLA}\n```\n**Spin.cfg**\n```\nSPECIFICATION Spec\n```"
    assert extract_artifact(reply, Language.TLA).artifact.files["Spin.cfg"] == "SPECIFICATION Spec\n"


def test_empty_and_missing_replies_give_an_error_for_the_model():
    assert "empty" in extract_artifact("", Language.SYSML).error
    assert extract_artifact("I cannot do that.", Language.PLANTUML).error.startswith("No PlantUML")
    assert extract_artifact("```json\n{\"broken\": \n```", Language.TLA).error.startswith("No TLA+ module")


def test_plantuml_prefers_block_with_startuml_and_prose_fallback():
    reply = "```\nnot this\n```\n```plantuml\n@startuml\nclass A\n@enduml\n```"
    assert extract_artifact(reply, Language.PLANTUML).artifact.main_text == "@startuml\nclass A\n@enduml"
    prose = "Diagram: @startuml\nclass B\n@enduml and more"
    assert extract_artifact(prose, Language.PLANTUML).artifact.main_text == "@startuml\nclass B\n@enduml"


def test_sysml_from_fence_and_from_prose():
    model = "package P {\n  part def A;\n}"
    assert extract_artifact(f"```sysml\n{model}\n```", Language.SYSML).artifact.main_text == model
    assert extract_artifact(f"Here you go:\n{model}", Language.SYSML).artifact.main_text.startswith("package P")


def test_fenced_blocks_are_the_blocks_the_fence_pattern_finds():
    """The fast scan (an opening fence, then its closing line) finds what ``FENCE.finditer`` finds: unclosed blocks,
    longer fences, a fence that closes only on a line of its own, fences mid-line, info strings with backticks."""
    import random

    from sysmo.llm.response import FENCE, fenced_blocks

    samples = ["```", "```\n", "```py\nx\n```", "a```b\n```\n``` \nc\n ```  \nd", "````x`\n``` \n````\n",
               "~~~\nx\n~~~\n```\ny", "```a\n\n```", "```\n```", "```\n\n```\n", "x```\ny\n```z\n```", TLA]
    pieces = ["`", "~", "\n", " ", "\t", "a", "```", "~~~", "````", "json", "{}"]
    rng = random.Random(7)
    samples += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 16))) for _ in range(20000)]
    for text in samples:
        expected = [(m.start(), m.end(), m.group("fence"), m.group("info"), m.group("body"),
                     m.group(0).rstrip().endswith(m.group("fence"))) for m in FENCE.finditer(text)]
        assert [(b.start, b.end, b.fence, b.info, b.body, b.closed(text)) for b in fenced_blocks(text)] == expected, text
