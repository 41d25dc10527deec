---------------------------- MODULE Spinlock ----------------------------
(* N workers share one test-and-set spinlock. A worker requests the lock,  *)
(* spins while the test-and-set fails, enters its critical section when it *)
(* succeeds, and releases the lock when it leaves.                         *)
EXTENDS Naturals

CONSTANT N
ASSUME N \in Nat \ {0}

Procs == 1..N

VARIABLES locked, pc
vars == <<locked, pc>>

TypeOK == locked \in BOOLEAN /\ pc \in [Procs -> {"idle", "spin", "cs"}]

Init == locked = FALSE /\ pc = [p \in Procs |-> "idle"]

Request(p) ==
    /\ pc[p] = "idle"
    /\ pc' = [pc EXCEPT ![p] = "spin"]
    /\ UNCHANGED locked

\* the test-and-set succeeds: the lock was free and is now taken, atomically
Acquire(p) ==
    /\ pc[p] = "spin"
    /\ ~locked
    /\ locked' = TRUE
    /\ pc' = [pc EXCEPT ![p] = "cs"]

\* BUG (modelling): a failed test-and-set is not a step of the model, although the code takes it

Release(p) ==
    /\ pc[p] = "cs"
    /\ locked' = FALSE
    /\ pc' = [pc EXCEPT ![p] = "idle"]

Next == \E p \in Procs : Request(p) \/ Acquire(p) \/ Release(p)

Spec == Init /\ [][Next]_vars /\ WF_vars(Next)
=============================================================================
