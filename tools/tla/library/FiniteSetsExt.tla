---------------------------- MODULE FiniteSetsExt ----------------------------
(***************************************************************************)
(* Operators on finite sets (a CommunityModules-compatible subset),        *)
(* written for sysmo in plain TLA+.  Helper modules are instantiated       *)
(* LOCAL, so a spec that extends this module and defines, say, its own     *)
(* Range does not clash with Functions.                                    *)
(***************************************************************************)
LOCAL INSTANCE Naturals
LOCAL INSTANCE FiniteSets
LOCAL INSTANCE Folds

(* Combine the elements of set with op (assumed associative and commutative), starting from base. *)
FoldSet(op(_, _), base, set) ==
    MapThenFoldSet(op, base, LAMBDA x : x, LAMBDA T : CHOOSE t \in T : TRUE, set)

(* The older name of FoldSet, with the set before the start value. *)
ReduceSet(op(_, _), set, acc) == FoldSet(op, acc, set)

(* Combine f(x) for every x in set with op, starting from base. *)
LOCAL MapThenFoldSetAny(op(_, _), base, f(_), set) ==
    MapThenFoldSet(op, base, f, LAMBDA T : CHOOSE t \in T : TRUE, set)

Sum(set) == FoldSet(LAMBDA x, y : x + y, 0, set)
Product(set) == FoldSet(LAMBDA x, y : x * y, 1, set)

(* The sum of f(x) over the elements x of set. *)
MapThenSumSet(f(_), set) == MapThenFoldSetAny(LAMBDA x, y : x + y, 0, f, set)

(* The union of a set of sets. *)
FlattenSet(S) == UNION S

(* The largest / smallest element of a finite, non-empty set of numbers. *)
Max(S) == CHOOSE x \in S : \A y \in S : x >= y
Min(S) == CHOOSE x \in S : \A y \in S : x =< y

(* How many elements of S satisfy P. *)
Quantify(S, P(_)) == Cardinality({s \in S : P(s)})

(* The subsets of S with exactly k elements (both argument orders are in use). *)
kSubset(k, S) == {T \in SUBSET S : Cardinality(T) = k}
Ksubsets(S, k) == kSubset(k, S)

(* The elements in exactly one of A and B. *)
SymDiff(A, B) == (A \ B) \cup (B \ A)

(* Every set that takes one element from each set in Sets. *)
Choices(Sets) ==
    LET ChoiceFunctions == {f \in [Sets -> UNION Sets] : \A T \in Sets : f[T] \in T}
    IN  {{f[T] : T \in Sets} : f \in ChoiceFunctions}

(* The one element of S that satisfies P (TLC fails if there is none or more than one). *)
ChooseUnique(S, P(_)) == CHOOSE x \in S : P(x) /\ \A y \in S : P(y) => y = x

==============================================================================
