"""Scoring cascades per language, metrics, statistics and reports."""
