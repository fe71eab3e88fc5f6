"""auto_memory and auto_resource: conversations and resources distilled into daily cards."""
