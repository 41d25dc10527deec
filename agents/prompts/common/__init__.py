"""Task prompt templates every agent shares, one per task kind (TLA+, SysML v2, class, architecture)."""
