-------------------------- MODULE BoundedBuffer --------------------------
(* Producers put items into a FIFO buffer of bounded capacity and        *)
(* consumers take them out. A producer waits while the buffer is full, a *)
(* consumer while it is empty. Each producer's item is its own id.       *)
EXTENDS Naturals, Sequences

CONSTANTS Producers, Consumers, Capacity  \* numbers of producers and consumers; buffer size
ASSUME Producers \in Nat \ {0} /\ Consumers \in Nat \ {0} /\ Capacity \in Nat \ {0}

ProducerIds == 1..Producers
ConsumerIds == 1..Consumers

VARIABLE buffer
vars == <<buffer>>

TypeOK == buffer \in Seq(ProducerIds)

Init == buffer = <<>>

Put(p) ==
    /\ Len(buffer) < Capacity
    /\ buffer' = Append(buffer, p)

Get(c) ==
    /\ Len(buffer) > 0
    /\ buffer' = Tail(buffer)

Next == (\E p \in ProducerIds : Put(p)) \/ (\E c \in ConsumerIds : Get(c))

Spec == Init /\ [][Next]_vars /\ WF_vars(Next)
=============================================================================
