from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome


def test_artifact_hash_depends_on_content_and_names():
    a = Artifact(language="tla", files={"A.tla": "x", "A.cfg": "y"})
    b = Artifact(language="tla", files={"A.cfg": "y", "A.tla": "x"})
    c = Artifact(language="tla", files={"A.tla": "x", "A.cfg": "z"})
    assert a.sha256 == b.sha256 != c.sha256
    assert a.main_file == "A.tla"


def test_check_result_summary_renders_compiler_style_lines():
    r = CheckResult(tool="sany", outcome=Outcome.FAILED,
                    diagnostics=[Diagnostic(tool="sany", message="Unknown operator Foo", line=3, column=7, file="A.tla")])
    assert r.summary() == "A.tla:3:7: error: Unknown operator Foo"
    text, cut = CheckResult.bound_output("x" * 100, limit=10)
    assert cut and "90 characters cut" in text
