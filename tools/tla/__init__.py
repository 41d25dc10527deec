"""TLA+ tools: SANY, TLC (model checking, simulation, coverage), trace validation."""
