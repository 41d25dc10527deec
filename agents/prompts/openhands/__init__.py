"""Prompt templates of the ``openhands`` agent (system and task messages)."""
