"""The starter TLA+ tasks: Python systems run by a seeded scheduler record the traces a spec must match."""
