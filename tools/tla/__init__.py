"""TLA+ tools: SANY (``sany.check``), TLC (``tlc.model_check``, ``tlc.simulate``, ``tlc.check_invariants``), trace validation.

Around them: ``unicode`` (Unicode operators to ASCII), ``cfg`` (TLC 2.15 cfg compatibility, one check at a
time), ``source`` (artifact to files), ``tlc_output`` (traces, coverage), ``library/`` (our pure-TLA+
SequencesExt, FiniteSetsExt, Functions, Folds and TLCExt subset, on the TLA-Library path of every run).
"""
