"""LLM pipelines: auto_memory, auto_resource and chat. Agents whose tools are reme jobs."""
