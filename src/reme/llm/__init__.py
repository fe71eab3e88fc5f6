"""LLM layer: model providers, the tool-calling agent runner, prompts and test doubles.

Nothing here imports pydantic-ai at module import time; it is loaded when a model is first built.
"""
