"""Scoring cascades, one module per task kind."""
