"""Starter TLA+ task: leader election (spec, cfg, traced Python system, buggy specs)."""
