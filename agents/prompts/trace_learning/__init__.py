"""Prompt templates of the ``trace_learning`` agent (system message and the learn-from-traces step)."""
