"""Prompting strategies (``--strategy``): worked examples, chain of thought and grammars per task kind."""
