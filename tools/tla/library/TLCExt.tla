------------------------------- MODULE TLCExt -------------------------------
(***************************************************************************)
(* The part of CommunityModules' TLCExt that plain TLA+ can express,       *)
(* written for sysmo.  Operators that need TLC internals (Trace,           *)
(* CounterExample, TLCModelValue, PickSuccessor) are deliberately absent,  *)
(* so a spec that uses them gets an "Unknown operator" diagnostic.         *)
(***************************************************************************)
LOCAL INSTANCE TLC

(* TRUE iff a = b; TLC prints both values when they differ. *)
AssertEq(a, b) == IF a = b THEN TRUE ELSE PrintT(<<"AssertEq failed", a, b>>) /\ FALSE

(* The value itself (a no-op marker). *)
TLCNoOp(val) == val

(* The expression itself: caching is only an optimisation. *)
TLCCache(expression, closure) == expression

==============================================================================
