"""Packaged prompt templates of the evaluation metrics (the SysMEval judge prompts)."""
