"""Our pure-TLA+ library modules (SequencesExt, FiniteSetsExt, Functions, TLCExt subset) parse and compute right under TLC 2.15."""

from __future__ import annotations

from sysmo.tools.tla import sany, tlc
from sysmo.tools.tla.jvm import library_dir

# Each ASSUME states what an operator must compute; TLC evaluates every ASSUME before exploring states.
ASSUMPTIONS = r"""
ASSUME ToSet(<<1, 2, 1>>) = {1, 2}
ASSUME LET s == SetToSeq({3, 4, 5}) IN Len(s) = 3 /\ ToSet(s) = {3, 4, 5}
ASSUME Cardinality(SetToSeqs({1, 2, 3})) = 6
ASSUME Cons(0, <<1, 2>>) = <<0, 1, 2>>
ASSUME Contains(<<1, 2>>, 2) /\ ~Contains(<<1, 2>>, 3)
ASSUME Reverse(<<1, 2, 3>>) = <<3, 2, 1>> /\ Reverse(<<>>) = <<>>
ASSUME Remove(<<1, 2, 1, 3>>, 1) = <<2, 3>>
ASSUME ReplaceAll(<<1, 2, 1>>, 1, 9) = <<9, 2, 9>>
ASSUME IsPrefix(<<1>>, <<1, 2>>) /\ IsPrefix(<<>>, <<1>>) /\ ~IsPrefix(<<2>>, <<1, 2>>)
ASSUME IsStrictPrefix(<<1>>, <<1, 2>>) /\ ~IsStrictPrefix(<<1, 2>>, <<1, 2>>)
ASSUME IsSuffix(<<2>>, <<1, 2>>) /\ ~IsSuffix(<<1>>, <<1, 2>>) /\ IsStrictSuffix(<<2>>, <<1, 2>>)
ASSUME Front(<<1, 2, 3>>) = <<1, 2>> /\ Last(<<1, 2, 3>>) = 3
ASSUME FlattenSeq(<<<<1, 2>>, <<>>, <<3>>>>) = <<1, 2, 3>>
ASSUME SeqOf({0, 1}, 2) = {<<>>, <<0>>, <<1>>, <<0, 0>>, <<0, 1>>, <<1, 0>>, <<1, 1>>}
ASSUME BoundedSeq({7}, 1) = {<<>>, <<7>>}
ASSUME TupleOf({1}, 2) = {<<1, 1>>}
ASSUME FoldSeq(LAMBDA x, y : x + y, 0, <<1, 2, 3>>) = 6
ASSUME FoldLeft(LAMBDA acc, x : <<acc, x>>, 0, <<3, 1, 2>>) = <<<<<<0, 3>>, 1>>, 2>>
ASSUME FoldRight(LAMBDA x, acc : <<x, acc>>, <<3, 1, 2>>, 0) = <<3, <<1, <<2, 0>>>>>>
ASSUME FoldLeft(LAMBDA acc, x : acc - x, 10, <<1, 2>>) = 7
ASSUME InsertAt(<<1, 3>>, 2, 2) = <<1, 2, 3>> /\ RemoveAt(<<1, 2, 3>>, 2) = <<1, 3>>
ASSUME ReplaceAt(<<1, 2>>, 1, 5) = <<5, 2>>
ASSUME SelectInSeq(<<5, 6, 7, 6>>, LAMBDA x : x = 6) = 2 /\ SelectLastInSeq(<<5, 6, 7, 6>>, LAMBDA x : x = 6) = 4
ASSUME SelectInSeq(<<5>>, LAMBDA x : x = 6) = 0
ASSUME RemoveFirst(<<1, 2, 1>>, 1) = <<2, 1>>
ASSUME Prefixes(<<1, 2>>) = {<<>>, <<1>>, <<1, 2>>} /\ Suffixes(<<1, 2>>) = {<<>>, <<2>>, <<1, 2>>}
ASSUME LongestCommonPrefix({<<1, 2, 3>>, <<1, 2, 4>>}) = <<1, 2>>
ASSUME Zip(<<1, 2>>, <<3, 4, 5>>) = <<<<1, 3>>, <<2, 4>>>>
ASSUME AllSubSeqs(<<1, 2, 3>>) = {<<>>, <<1>>, <<2>>, <<3>>, <<1, 2>>, <<1, 3>>, <<2, 3>>, <<1, 2, 3>>}
ASSUME SetToSortSeq({3, 1, 2}, <) = <<1, 2, 3>>
ASSUME IsSorted(<<1, 2, 2>>, \leq) /\ ~IsSorted(<<2, 1>>, <)
ASSUME Indices(<<1, 2, 1>>, 1) = {1, 3}
ASSUME FoldSet(LAMBDA x, y : x + y, 0, 1..10) = 55
ASSUME ReduceSet(LAMBDA x, y : x + y, 1..4, 0) = 10
ASSUME Sum({1, 2, 3}) = 6 /\ Sum({}) = 0 /\ Product({2, 3, 4}) = 24
ASSUME MapThenSumSet(LAMBDA x : x * x, {1, 2, 3}) = 14
ASSUME Max({3, 9, 2}) = 9 /\ Min({3, 9, 2}) = 2
ASSUME Quantify(1..9, LAMBDA n : n % 2 = 0) = 4
ASSUME SymDiff({1, 2, 3}, {3, 4}) = {1, 2, 4}
ASSUME kSubset(2, 1..3) = {{1, 2}, {1, 3}, {2, 3}} /\ Ksubsets(1..3, 2) = kSubset(2, 1..3)
ASSUME FlattenSet({{1}, {2, 3}}) = {1, 2, 3}
ASSUME Choices({{1, 2}, {3}}) = {{1, 3}, {2, 3}}
ASSUME ChooseUnique({2, 3, 4, 5}, LAMBDA x : x % 3 = 1) = 4
ASSUME Restrict([x \in 1..3 |-> x * 2], {1, 2}) = [x \in 1..2 |-> x * 2]
ASSUME Range([x \in 1..3 |-> x % 2]) = {0, 1}
ASSUME Inverse([x \in 1..3 |-> x + 10], 1..3, 11..13) = [y \in 11..13 |-> y - 10]
ASSUME AntiFunction(<<"a", "b">>) = [v \in {"a", "b"} |-> IF v = "a" THEN 1 ELSE 2]
ASSUME IsInjective(<<1, 2>>) /\ ~IsInjective(<<1, 1>>)
ASSUME Cardinality(Injection(1..2, 1..3)) = 6 /\ Cardinality(Surjection(1..3, 1..2)) = 6
ASSUME Cardinality(Bijection(1..3, 1..3)) = 6
ASSUME ExistsInjection(1..2, 1..3) /\ ~ExistsInjection(1..3, 1..2)
ASSUME ExistsSurjection(1..3, 1..2) /\ ~ExistsBijection(1..2, 1..3) /\ ExistsBijection(1..2, 3..4)
ASSUME RestrictDomain([x \in 1..4 |-> x], LAMBDA x : x > 2) = [x \in 3..4 |-> x]
ASSUME IsRestriction([x \in 1..2 |-> x], [x \in 1..4 |-> x])
ASSUME FoldFunction(LAMBDA x, y : x + y, 0, [x \in 1..4 |-> x]) = 10
ASSUME FoldFunctionOnSet(LAMBDA x, y : x + y, 0, [x \in 1..4 |-> x], {1, 4}) = 5
ASSUME AssertEq(1 + 1, 2) /\ TLCNoOp(3) = 3
"""

HEADER = "---- MODULE LibCheck ----\n" \
    "EXTENDS Naturals, Sequences, FiniteSets, TLC, SequencesExt, FiniteSetsExt, Functions, TLCExt\n"
FOOTER = "VARIABLE x\nInit == x = 0\nNext == UNCHANGED x\n====\n"
CFG = "INIT Init\nNEXT Next\n"


def test_library_dir_holds_the_modules() -> None:
    names = {p.name for p in library_dir().glob("*.tla")}
    assert {"SequencesExt.tla", "FiniteSetsExt.tla", "Functions.tla", "Folds.tla", "TLCExt.tla"} <= names


def test_library_modules_pass_sany() -> None:
    for path in sorted(library_dir().glob("*.tla")):
        result = sany.check(path.read_text())
        assert result.outcome == "ok", f"{path.name}: {result.summary()}"


def test_tlc_evaluates_every_library_operator_as_specified() -> None:
    result = tlc.model_check(HEADER + ASSUMPTIONS + FOOTER, CFG, check_deadlock=False, timeout_s=120)
    assert result.outcome == "ok", result.summary()


def test_a_wrong_expectation_about_a_library_operator_fails_the_assumption() -> None:
    # the control for the test above: a false ASSUME about the library is caught, on its line
    wrong = HEADER + "ASSUME Reverse(<<1, 2>>) = <<1, 2>>\n" + FOOTER
    result = tlc.model_check(wrong, CFG, check_deadlock=False, timeout_s=60)
    assert result.outcome == "failed"
    assert result.errors[0].code == "assumption" and result.errors[0].line == 3


def test_a_spec_may_define_max_min_and_range_next_to_sequencesext() -> None:
    # helper modules are LOCAL INSTANCEs, so their names do not leak into the spec (LLM specs define these)
    spec = ("---- MODULE OwnOps ----\nEXTENDS Naturals, Sequences, SequencesExt\n"
            "Max(S) == CHOOSE m \\in S : \\A y \\in S : m >= y\n"
            "Min(S) == CHOOSE m \\in S : \\A y \\in S : m =< y\n"
            "Range(f) == {f[i] : i \\in DOMAIN f}\n"
            "Top == Max(Range(Reverse(<<1, 5, 2>>)))\n====\n")
    result = sany.check(spec)
    assert result.outcome == "ok", result.summary()


def test_missing_community_operators_are_reported_not_invented() -> None:
    spec = "---- MODULE UsesTrace ----\nEXTENDS TLCExt\nT == Trace\n====\n"
    result = sany.check(spec)
    assert result.outcome == "failed"
    assert result.errors[0].line == 3 and "Trace" in result.errors[0].message


def test_sequencesext_brings_the_standard_sequence_operators_along() -> None:
    spec = "---- MODULE OnlyExt ----\nEXTENDS SequencesExt\nL == Len(Append(Tail(<<1, 2>>), 3))\n====\n"
    result = sany.check(spec)
    assert result.outcome == "ok", result.summary()
