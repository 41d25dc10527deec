"""Packaged prompt templates of the evaluation judges (SysMEval, architecture node alignment and rubric)."""
