"""Models with many imports of a name that resolves nowhere: answered at once, the same at every load."""

from __future__ import annotations

import time

from sysmo.contracts.check import Outcome
from sysmo.tools.sysml.import_fanout import MAX_REWALKING_IMPORTS, fanout_candidate, rewalking_imports
from sysmo.tools.sysml.validate import validate

OVER = MAX_REWALKING_IMPORTS + 6  # far past what OpenSysML answers without the bound (13: no answer in 150 s)


def test_the_forms_that_surface_the_first_name_are_counted_and_qualified_members_are_not():
    text = "\n".join(["import org;", "private import org::*;", "import org.omg.core::Block", "import org.omg.X as X",
                      "import org::Member;", "public import org::a::b::**;"])
    assert rewalking_imports({"m.sysml": text}) == {"org": 5}


def test_a_name_the_model_declares_or_mentions_elsewhere_does_not_count():
    imports = "".join(f"import Fuel.Tank{i}\n" for i in range(OVER))
    assert fanout_candidate({"m.sysml": imports}) == ("Fuel", OVER)
    assert fanout_candidate({"m.sysml": "package Fuel;\n" + imports}) is None
    assert fanout_candidate({"m.sysml": imports, "other.sysml": "part def Fuel;"}) is None
    assert fanout_candidate({"m.sysml": imports.replace(".", "::")}) is None  # membership imports of Tank<i>
    few = "".join(f"import Fuel.Tank{i}\n" for i in range(MAX_REWALKING_IMPORTS))
    assert fanout_candidate({"m.sysml": few}) is None


def test_a_prediction_that_hung_the_resolver_fails_at_once_for_its_syntax_errors():
    # the shape of DesignBench's Meta-Llama-3.1-8B-Instruct/direct predictions that got no answer in 20 s
    text = "package Vehicle\n\n" + "".join(f"import org.omg.sysml.v2_0.core::Block{i}\n" for i in range(OVER))
    text += "\nclass Vehicle extends Block0 {\n  property name : String\n}\n"
    started = time.monotonic()
    result = validate(text, timeout_s=60)
    assert time.monotonic() - started < 30  # unbounded, the kernel gives no answer for many minutes
    assert result.outcome == Outcome.FAILED
    assert result.details["reason"] == "import-fanout" and result.details["imports"] == OVER
    assert {d.code for d in result.diagnostics} == {"syntax", "import-fanout"}
    assert all(d.file == "model.sysml" for d in result.diagnostics if d.code == "syntax")
    assert validate(text, timeout_s=60).model_dump(exclude={"duration_s", "details"}) == result.model_dump(
        exclude={"duration_s", "details"})  # the same answer again


def test_a_model_without_syntax_errors_over_the_bound_is_inconclusive_not_failed():
    text = "package P {\n" + "".join("  private import org;\n" for _ in range(OVER)) + "  part def A;\n}\n"
    result = validate(text, timeout_s=60)
    assert result.outcome == Outcome.INCONCLUSIVE
    assert [d.code for d in result.diagnostics] == ["import-fanout"]


def test_the_stub_declares_the_namespaces_the_imports_name():
    from sysmo.tools.sysml.import_fanout import stub_model

    text = "import org::a::b::*;\nimport org::a::c::*;\nimport org.omg.core::Block\nimport org::X;\n"
    assert stub_model("org", {"m.sysml": text}) == "package org { package a { package b; package c; } }\n"


def test_imports_of_a_library_package_are_loaded_as_usual():
    text = ("package P {\n" + "".join("  private import ScalarValues::*;\n" for _ in range(OVER))
            + "  part def A { attribute x : Real; }\n}\n")
    result = validate(text, timeout_s=60)
    assert result.outcome == Outcome.OK
    assert "reason" not in result.details
