-------------------------------- MODULE Folds --------------------------------
(***************************************************************************)
(* Folding over finite sets, written for sysmo in plain TLA+ so that TLC   *)
(* 2.15 evaluates it without Java overrides.                               *)
(***************************************************************************)

(***************************************************************************)
(* Start from base and combine f(x) for every x in the finite set S with   *)
(* op; pick(T) says which element of a non-empty subset T goes first, so   *)
(* the result is op(f(pick(S)), op(f(...), ... op(f(last), base))).        *)
(***************************************************************************)
MapThenFoldSet(op(_, _), base, f(_), pick(_), S) ==
    LET fold[T \in SUBSET S] ==
            IF T = {} THEN base
            ELSE LET x == pick(T)
                 IN  op(f(x), fold[T \ {x}])
    IN  fold[S]

==============================================================================
