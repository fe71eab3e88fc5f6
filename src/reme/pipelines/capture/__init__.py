"""Capture of conversations and agent sessions: readers, merging, redaction."""
