"""sysmo: LLM agents write system models; real language tools check and score them."""

__version__ = "0.1.0"
