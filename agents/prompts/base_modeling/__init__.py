"""Prompt templates of the ``base_modeling`` agent (package files read by ``agents.prompts.load_prompt``)."""
