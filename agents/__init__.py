"""Agent paradigms: LangGraph state machines built from graphs/ parts, registered by name."""
