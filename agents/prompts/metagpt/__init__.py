"""Prompt templates of the ``metagpt`` agent, one per role (analyst, architect, modeler, reviewer)."""
