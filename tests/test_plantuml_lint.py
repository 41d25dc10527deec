"""Lint rules for what PlantUML wrongly accepts, and that lint findings fail a check PlantUML would pass."""

from __future__ import annotations

from sysmo.tools.plantuml.server import plantuml_server
from sysmo.tools.plantuml.check import check
from sysmo.tools.plantuml.lint import lint
from sysmo.tools.plantuml.source import diagram_source
from sysmo.contracts.check import Outcome

SWALLOWED = """@startuml
class Order {
  +id : int
class Customer {
  +name : String
}
Order --> Customer
@enduml
"""


def codes(text: str, **kw) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in lint(text, **kw)]


def test_clean_diagram_has_no_findings():
    text = (
        "@startuml\npackage shop {\n  class Order {\n    -- ids --\n    +id : int\n    {static} +count : int\n  }\n}\n"
        "skinparam class {\n  BackgroundColor white\n}\n' a comment\nOrder --> Customer\n@enduml\n"
    )
    assert lint(text) == []


def test_class_body_swallowing_the_next_class_is_reported_on_the_opening_line():
    assert codes(SWALLOWED) == [("unclosed-body", 2)]
    assert "Customer" in lint(SWALLOWED)[0].message


def test_plantuml_accepts_a_swallowed_class_but_the_check_fails_it():
    assert plantuml_server().render(SWALLOWED).error is None  # the leniency this rule exists for
    result = check(SWALLOWED)
    assert result.outcome == Outcome.FAILED
    assert [(d.code, d.line) for d in result.diagnostics] == [("unclosed-body", 2)]


def test_relationship_inside_an_open_body_is_a_swallowed_body():
    text = "@startuml\nclass A {\n  x : int\nA --> B\n}\n@enduml"
    assert codes(text) == [("unclosed-body", 2)]


def test_body_never_closed_before_enduml():
    assert codes("@startuml\nclass A {\n  x : int\n@enduml") == [("unclosed-body", 2)]


def test_dotted_names_and_separators_inside_a_body_are_not_relationships():
    text = "@startuml\nclass A {\n  .. audit ..\n  date.time : Date\n  -- private --\n  java.util.List items\n}\n@enduml"
    assert lint(text) == []


def test_missing_enduml():
    assert codes("@startuml\nclass A\nA --> B\n") == [("missing-enduml", 3)]


def test_missing_startuml():
    assert codes("class A\nA --> B\n@enduml") == [("missing-startuml", 1)]


def test_bare_diagram_body_lacks_both_ends():
    assert codes("class A\nA --> B") == [("missing-startuml", 1), ("missing-enduml", 2)]


def test_markdown_fences_are_reported_on_their_lines():
    text = "```plantuml\n@startuml\nclass A\n@enduml\n```"
    assert codes(text) == [("markdown-fence", 1), ("markdown-fence", 5)]


def test_markdown_fence_makes_the_check_fail_although_plantuml_ignores_it():
    result = check("```plantuml\n@startuml\nclass A\n@enduml\n```")
    assert result.outcome == Outcome.FAILED
    assert {d.code for d in result.diagnostics} == {"markdown-fence"}


def test_multiple_diagrams_when_one_is_expected():
    text = "@startuml\nclass A\n@enduml\n\n@startuml\nclass B\n@enduml"
    assert codes(text) == [("multiple-diagrams", 5)]
    assert codes(text, single=False) == []


def test_stray_closing_brace():
    assert codes("@startuml\nclass A {\n  x : int\n}\n}\n@enduml") == [("stray-brace", 5)]


def test_diagram_source_maps_lines_of_a_diagram_missing_its_start():
    block = diagram_source("prose\n```\nclass A\nfoo bar\n```").first()
    assert not block.has_start and not block.has_end
    assert block.text() == "@startuml\nclass A\nfoo bar\n@enduml"
    assert block.original_line(3) == 4  # "foo bar"
