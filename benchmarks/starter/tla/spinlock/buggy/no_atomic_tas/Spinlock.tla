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

\* BUG: the test and the set are not one atomic step, so the test is lost:
\* a worker takes the lock without seeing that it is already taken
Acquire(p) ==
    /\ pc[p] = "spin"
    /\ locked' = TRUE
    /\ pc' = [pc EXCEPT ![p] = "cs"]

\* the test-and-set fails: the lock is taken, nothing changes
Spin(p) ==
    /\ pc[p] = "spin"
    /\ locked
    /\ UNCHANGED vars

Release(p) ==
    /\ pc[p] = "cs"
    /\ locked' = FALSE
    /\ pc' = [pc EXCEPT ![p] = "idle"]

Next == \E p \in Procs : Request(p) \/ Acquire(p) \/ Spin(p) \/ Release(p)

Spec == Init /\ [][Next]_vars /\ WF_vars(Next)
=============================================================================
