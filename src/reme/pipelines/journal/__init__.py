"""The run journal shared by dream, maintain, annotate and revert: records, changelog, revert."""
