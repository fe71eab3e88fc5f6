"""Workspace layer: path safety, atomic locked writes, front matter, wikilinks, file and daily operations."""
