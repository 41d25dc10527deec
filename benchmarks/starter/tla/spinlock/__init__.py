"""Starter TLA+ task: a spinlock (spec, cfg, traced Python system, buggy specs)."""
