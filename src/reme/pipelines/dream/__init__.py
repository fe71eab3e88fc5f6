"""auto_dream: daily material consolidated into the digest, guarded in code (docs/spec.md §12)."""
