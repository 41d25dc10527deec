"""Shared LangGraph parts: state schema, nodes, the bounded repair loop, checkpointing."""
