"""Starter TLA+ task: a bounded producer/consumer buffer (spec, cfg, traced Python system, buggy specs)."""
