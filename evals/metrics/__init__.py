"""Metrics used by the cascades."""
