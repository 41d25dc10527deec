------------------------- MODULE TwoPhaseCommit -------------------------
(* Two-phase commit with one coordinator (TM) and N resource managers    *)
(* (RMs). An RM votes yes (prepared) or no (aborted at once) by sending  *)
(* its vote; the TM records votes as they arrive, commits when all are   *)
(* yes, aborts on the first no, and broadcasts its decision, which the   *)
(* prepared RMs apply. Sent messages stay in the set msgs (a message can *)
(* be received any time after it was sent).                              *)
EXTENDS Naturals

CONSTANT N
ASSUME N \in Nat \ {0}

RMs == 1..N

VARIABLES rmState, tmState, votes, msgs
vars == <<rmState, tmState, votes, msgs>>

Messages == [type : {"yes", "no"}, rm : RMs] \cup [type : {"commit", "abort"}]

TypeOK ==
    /\ rmState \in [RMs -> {"working", "prepared", "committed", "aborted"}]
    /\ tmState \in {"init", "committed", "aborted"}
    /\ votes \in [RMs -> {"none", "yes", "no"}]
    /\ msgs \subseteq Messages

Init ==
    /\ rmState = [rm \in RMs |-> "working"]
    /\ tmState = "init"
    /\ votes = [rm \in RMs |-> "none"]
    /\ msgs = {}

VoteYes(rm) ==
    /\ rmState[rm] = "working"
    /\ rmState' = [rmState EXCEPT ![rm] = "prepared"]
    /\ msgs' = msgs \cup {[type |-> "yes", rm |-> rm]}
    /\ UNCHANGED <<tmState, votes>>

VoteNo(rm) ==
    /\ rmState[rm] = "working"
    /\ rmState' = [rmState EXCEPT ![rm] = "aborted"]
    /\ msgs' = msgs \cup {[type |-> "no", rm |-> rm]}
    /\ UNCHANGED <<tmState, votes>>

RecvVote(rm, vote) ==
    /\ tmState = "init"
    /\ votes[rm] = "none"
    /\ [type |-> vote, rm |-> rm] \in msgs
    /\ votes' = [votes EXCEPT ![rm] = vote]
    /\ UNCHANGED <<rmState, tmState, msgs>>

Commit ==
    /\ tmState = "init"
    /\ \A rm \in RMs : votes[rm] = "yes"
    /\ tmState' = "committed"
    /\ msgs' = msgs \cup {[type |-> "commit"]}
    /\ UNCHANGED <<rmState, votes>>

Abort ==
    /\ tmState = "init"
    /\ \E rm \in RMs : votes[rm] = "no"
    /\ tmState' = "aborted"
    /\ msgs' = msgs \cup {[type |-> "abort"]}
    /\ UNCHANGED <<rmState, votes>>

RecvCommit(rm) ==
    /\ rmState[rm] = "prepared"
    /\ [type |-> "commit"] \in msgs
    /\ rmState' = [rmState EXCEPT ![rm] = "committed"]
    /\ UNCHANGED <<tmState, votes, msgs>>

RecvAbort(rm) ==
    /\ rmState[rm] = "prepared"
    /\ [type |-> "abort"] \in msgs
    /\ rmState' = [rmState EXCEPT ![rm] = "aborted"]
    /\ UNCHANGED <<tmState, votes, msgs>>

\* every RM and the TM have decided: the protocol is over (stuttering, so that the end is no deadlock)
Terminated ==
    /\ tmState # "init"
    /\ \A rm \in RMs : rmState[rm] \in {"committed", "aborted"}
    /\ UNCHANGED vars

Next ==
    \/ \E rm \in RMs : VoteYes(rm) \/ VoteNo(rm) \/ RecvCommit(rm) \/ RecvAbort(rm)
    \/ \E rm \in RMs, vote \in {"yes", "no"} : RecvVote(rm, vote)
    \/ Commit \/ Abort
    \/ Terminated

Spec == Init /\ [][Next]_vars /\ WF_vars(Next)
=============================================================================
