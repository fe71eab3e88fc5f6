"""Proactive refresh and reading of the day's topics (docs/spec.md §13)."""
