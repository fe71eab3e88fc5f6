"""Importers of outside material (ChatGPT, Claude Code, mem0, Obsidian, agent sessions)."""
