"""Pure-TLA+ modules written for sysmo (SequencesExt, FiniteSetsExt, Functions, Folds, TLCExt subsets) for the library path."""
