---------------------------- MODULE SequencesExt ----------------------------
(***************************************************************************)
(* Operators on sequences (a CommunityModules-compatible subset), written  *)
(* for sysmo in plain TLA+.  It extends the standard Sequences module (so *)
(* Len, Append, ... come with it, as in CommunityModules), but the other   *)
(* helper modules are instantiated LOCAL, so a spec that extends this      *)
(* module may define its own Max, Min or Range.                            *)
(***************************************************************************)
EXTENDS Sequences
LOCAL INSTANCE Naturals
LOCAL INSTANCE FiniteSets
LOCAL INSTANCE TLC
LOCAL INSTANCE Folds

LOCAL SetMax(S) == CHOOSE x \in S : \A y \in S : x >= y
LOCAL SetMin(S) == CHOOSE x \in S : \A y \in S : x =< y
LOCAL Injective(f) == \A a, b \in DOMAIN f : f[a] = f[b] => a = b

-----------------------------------------------------------------------------
(* Conversions *)

(* The set of elements of s. *)
ToSet(s) == {s[i] : i \in DOMAIN s}

(* Some sequence that holds every element of the finite set S exactly once. *)
SetToSeq(S) == CHOOSE f \in [1..Cardinality(S) -> S] : Injective(f)

(* Every sequence that holds every element of S exactly once. *)
SetToSeqs(S) == {f \in [1..Cardinality(S) -> S] : Injective(f)}

(* The elements of S as a sequence sorted by the order op. *)
SetToSortSeq(S, op(_, _)) == SortSeq(SetToSeq(S), op)

(* All duplicate-free sequences of elements of S, of every length. *)
SetToAllKPermutations(S) == UNION {SetToSeqs(T) : T \in SUBSET S}

(* The bag (multiset) of the elements of s. *)
ToBag(s) == [x \in ToSet(s) |-> Cardinality({i \in DOMAIN s : s[i] = x})]

(* Sequences of exactly n elements of set. *)
TupleOf(set, n) == [1..n -> set]

(* Sequences of at most n elements of set, the empty one included. *)
SeqOf(set, n) == UNION {[1..m -> set] : m \in 0..n}
BoundedSeq(S, n) == SeqOf(S, n)

-----------------------------------------------------------------------------
(* Queries *)

Contains(s, e) == \E i \in 1..Len(s) : s[i] = e

IsSorted(s, op(_, _)) == \A i, j \in 1..Len(s) : i < j => op(s[i], s[j])

(* The index of the first / last element that satisfies Test, 0 if none does. *)
SelectInSeq(seq, Test(_)) ==
    LET I == {i \in 1..Len(seq) : Test(seq[i])}
    IN  IF I = {} THEN 0 ELSE SetMin(I)
SelectLastInSeq(seq, Test(_)) ==
    LET I == {i \in 1..Len(seq) : Test(seq[i])}
    IN  IF I = {} THEN 0 ELSE SetMax(I)
SelectInSubSeq(seq, from, to, Test(_)) == SelectInSeq(SubSeq(seq, from, to), Test)
SelectLastInSubSeq(seq, from, to, Test(_)) == SelectLastInSeq(SubSeq(seq, from, to), Test)

(* The indices of s that hold e. *)
Indices(s, e) == {i \in 1..Len(s) : s[i] = e}

-----------------------------------------------------------------------------
(* Building and changing sequences *)

Reverse(s) == [i \in 1..Len(s) |-> s[(Len(s) - i) + 1]]

(* s without any occurrence of e. *)
Remove(s, e) == SelectSeq(s, LAMBDA t : t # e)

(* s with every occurrence of old replaced by new. *)
ReplaceAll(s, old, new) == [i \in 1..Len(s) |-> IF s[i] = old THEN new ELSE s[i]]

InsertAt(s, i, e) == SubSeq(s, 1, i - 1) \o <<e>> \o SubSeq(s, i, Len(s))
ReplaceAt(s, i, e) == [s EXCEPT ![i] = e]
RemoveAt(s, i) == SubSeq(s, 1, i - 1) \o SubSeq(s, i + 1, Len(s))

(* s without its first occurrence of e / its first element that satisfies Test. *)
RemoveFirst(s, e) ==
    IF \E i \in 1..Len(s) : s[i] = e THEN RemoveAt(s, SelectInSeq(s, LAMBDA v : v = e)) ELSE s
RemoveFirstMatch(s, Test(_)) ==
    IF \E i \in 1..Len(s) : Test(s[i]) THEN RemoveAt(s, SelectInSeq(s, Test)) ELSE s

Cons(elt, seq) == <<elt>> \o seq
Snoc(elt, seq) == Append(seq, elt)

(* s without its last element; the last element. *)
Front(s) == SubSeq(s, 1, Len(s) - 1)
Last(s) == s[Len(s)]

-----------------------------------------------------------------------------
(* Prefixes and suffixes *)

IsPrefix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, 1, Len(s)) = s
IsStrictPrefix(s, t) == IsPrefix(s, t) /\ s # t
IsSuffix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, Len(t) - Len(s) + 1, Len(t)) = s
IsStrictSuffix(s, t) == IsSuffix(s, t) /\ s # t

Prefixes(s) == {SubSeq(s, 1, l) : l \in 0..Len(s)}
Suffixes(s) == {SubSeq(s, l, Len(s)) : l \in 1..Len(s)} \cup {<<>>}

CommonPrefixes(S) ==
    LET P == UNION {Prefixes(seq) : seq \in S}
    IN  {p \in P : \A t \in S : IsPrefix(p, t)}
LongestCommonPrefix(S) ==
    CHOOSE p \in CommonPrefixes(S) : \A q \in CommonPrefixes(S) : Len(q) <= Len(p)

(* a modulo b in 1..b, for indexing sequences cyclically. *)
SeqMod(a, b) == IF a % b = 0 THEN b ELSE a % b

-----------------------------------------------------------------------------
(* Folds *)

(* Combine the elements of seq with op in no particular order (op associative and commutative). *)
FoldSeq(op(_, _), base, seq) ==
    MapThenFoldSet(op, base, LAMBDA i : seq[i], LAMBDA T : CHOOSE t \in T : TRUE, DOMAIN seq)

(* op(...op(op(base, s[1]), s[2])..., s[n]) *)
FoldLeft(op(_, _), base, seq) ==
    MapThenFoldSet(LAMBDA x, acc : op(acc, x), base, LAMBDA i : seq[i], SetMax, DOMAIN seq)

(* op(s[1], op(s[2], ... op(s[n], base)...)) *)
FoldRight(op(_, _), seq, base) ==
    MapThenFoldSet(op, base, LAMBDA i : seq[i], SetMin, DOMAIN seq)

FoldLeftDomain(op(_, _), base, seq) == FoldLeft(op, base, [i \in DOMAIN seq |-> i])
FoldRightDomain(op(_, _), seq, base) == FoldRight(op, [i \in DOMAIN seq |-> i], base)

(* The concatenation of a sequence of sequences (also of strings). *)
FlattenSeq(seqs) ==
    IF Len(seqs) = 0 THEN seqs
    ELSE LET flat[i \in 1..Len(seqs)] == IF i = 1 THEN seqs[1] ELSE flat[i - 1] \o seqs[i]
         IN  flat[Len(seqs)]

(* Pairs of the i-th elements of s and t, as long as the shorter one. *)
Zip(s, t) ==
    LET l == IF Len(s) <= Len(t) THEN Len(s) ELSE Len(t)
    IN  [i \in 1..l |-> <<s[i], t[i]>>]

(* The contiguous subsequences of s (the empty one included). *)
SubSeqs(s) == {SubSeq(s, i + 1, j) : i, j \in 0..Len(s)}

(* Every subsequence of s, contiguous or not, keeping the order. *)
AllSubSeqs(s) ==
    {[k \in 1..Cardinality(D) |->
        s[CHOOSE i \in D : Cardinality({j \in D : j =< i}) = k]] : D \in SUBSET DOMAIN s}

==============================================================================
