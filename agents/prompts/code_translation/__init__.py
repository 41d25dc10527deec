"""Prompt templates of the ``code_translation`` agent: abstract, translate and restructure steps for TLA+."""
