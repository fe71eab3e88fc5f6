"""Digest upkeep: node listing, audit, split maintenance and export (docs/spec.md §12.5)."""
