"""Test doubles for the LLM layer: a scripted model and a fake OpenAI-compatible server."""
