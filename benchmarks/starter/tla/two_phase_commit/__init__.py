"""Starter TLA+ task: two-phase commit (spec, cfg, traced Python system, buggy specs)."""
