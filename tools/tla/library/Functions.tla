------------------------------ MODULE Functions ------------------------------
(***************************************************************************)
(* Operators on functions (a CommunityModules-compatible subset), written  *)
(* for sysmo in plain TLA+.                                                *)
(***************************************************************************)
LOCAL INSTANCE Folds

(* f restricted to the set S (S should be a subset of DOMAIN f). *)
Restrict(f, S) == [x \in S |-> f[x]]

(* f restricted to the part of its domain that satisfies Test. *)
RestrictDomain(f, Test(_)) == Restrict(f, {x \in DOMAIN f : Test(x)})

(* f restricted to the arguments whose value satisfies Test. *)
RestrictValues(f, Test(_)) == Restrict(f, {x \in DOMAIN f : Test(f[x])})

(* TRUE iff f is g restricted to a subset of g's domain. *)
IsRestriction(f, g) ==
    /\ DOMAIN f \subseteq DOMAIN g
    /\ \A x \in DOMAIN f : f[x] = g[x]

(* The set of values of f (its image). *)
Range(f) == {f[x] : x \in DOMAIN f}

(* An inverse of f from T back to S: each t in Range(f) goes to some s with f[s] = t. *)
Inverse(f, S, T) == [t \in T |-> CHOOSE s \in S : t \in Range(f) => f[s] = t]

(* The inverse of an injective f, defined on Range(f). *)
AntiFunction(f) == Inverse(f, DOMAIN f, Range(f))

(* TRUE iff no two arguments of f have the same value. *)
IsInjective(f) == \A a, b \in DOMAIN f : f[a] = f[b] => a = b

(* TRUE iff every element of T is a value of f. *)
IsSurjective(f, S, T) == \A t \in T : \E s \in S : f[s] = t

(* TRUE iff f is a one-to-one correspondence between S and T. *)
IsBijection(f, S, T) == IsInjective(f) /\ IsSurjective(f, S, T)

Injection(S, T) == {M \in [S -> T] : IsInjective(M)}
Surjection(S, T) == {M \in [S -> T] : IsSurjective(M, S, T)}
Bijection(S, T) == Injection(S, T) \cap Surjection(S, T)

ExistsInjection(S, T) == Injection(S, T) # {}
ExistsSurjection(S, T) == Surjection(S, T) # {}
ExistsBijection(S, T) == Bijection(S, T) # {}

(* Combine all values of fun with op (assumed associative and commutative), starting from base. *)
FoldFunction(op(_, _), base, fun) ==
    MapThenFoldSet(op, base, LAMBDA i : fun[i], LAMBDA T : CHOOSE t \in T : TRUE, DOMAIN fun)

(* Like FoldFunction, over the arguments in indices (a subset of DOMAIN fun) only. *)
FoldFunctionOnSet(op(_, _), base, fun, indices) ==
    MapThenFoldSet(op, base, LAMBDA i : fun[i], LAMBDA T : CHOOSE t \in T : TRUE, indices)

==============================================================================
