------------------------- MODULE LeaderElection -------------------------
(* Chang-Roberts leader election on a unidirectional ring. The node at   *)
(* ring position n has the unique id Ids[n] and sends only to Succ(n).   *)
(* A node starts by sending its id; on receiving an id it forwards a     *)
(* larger one (and has lost), discards a smaller one, and is elected     *)
(* when its own id returns. Channels are FIFO queues (inbox[n]).         *)
EXTENDS Naturals, Sequences

CONSTANT Ids  \* a sequence of distinct natural numbers, in ring order
ASSUME /\ Ids \in Seq(Nat) /\ Len(Ids) >= 2
       /\ \A i, j \in 1..Len(Ids) : i # j => Ids[i] # Ids[j]

\* a ring for model checking (the cfg substitutes it for Ids)
ModelIds == <<2, 4, 1, 3>>

Nodes == 1..Len(Ids)
Succ(n) == IF n = Len(Ids) THEN 1 ELSE n + 1
MaxId == CHOOSE m \in {Ids[n] : n \in Nodes} : \A n \in Nodes : Ids[n] <= m

VARIABLES status, inbox
vars == <<status, inbox>>

TypeOK ==
    /\ status \in [Nodes -> {"init", "candidate", "lost", "leader"}]
    /\ inbox \in [Nodes -> Seq({Ids[n] : n \in Nodes})]

Init ==
    /\ status = [n \in Nodes |-> "init"]
    /\ inbox = [n \in Nodes |-> <<>>]

Start(n) ==
    /\ status[n] = "init"
    /\ status' = [status EXCEPT ![n] = "candidate"]
    /\ inbox' = [inbox EXCEPT ![Succ(n)] = Append(@, Ids[n])]

Receiving(n) == status[n] # "init" /\ inbox[n] # <<>>

Forward(n) ==
    /\ Receiving(n)
    /\ Head(inbox[n]) > Ids[n]
    /\ status' = [status EXCEPT ![n] = "lost"]
    /\ inbox' = [inbox EXCEPT ![n] = Tail(@), ![Succ(n)] = Append(@, Head(inbox[n]))]

Discard(n) ==
    /\ Receiving(n)
    /\ Head(inbox[n]) < Ids[n]
    /\ inbox' = [inbox EXCEPT ![n] = Tail(@)]
    /\ UNCHANGED status

Elected(n) ==
    /\ Receiving(n)
    /\ Head(inbox[n]) = Ids[n]
    /\ status' = [status EXCEPT ![n] = "leader"]
    /\ inbox' = [inbox EXCEPT ![n] = Tail(@)]

\* every node has started and no message is in flight: the election is over
\* (stuttering, so that the end is no deadlock)
Terminated ==
    /\ \A n \in Nodes : status[n] # "init" /\ inbox[n] = <<>>
    /\ UNCHANGED vars

Next == (\E n \in Nodes : Start(n) \/ Forward(n) \/ Discard(n) \/ Elected(n)) \/ Terminated

Spec == Init /\ [][Next]_vars /\ WF_vars(Next)
=============================================================================
